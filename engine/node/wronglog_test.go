package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// recreateStream deletes a stream and creates it again with the same
// configuration, as an operator's tooling would: same name, subjects and
// limits, a new creation instant, sequences from 1.
func recreateStream(t *testing.T, b *broker.Embedded, name string) {
	t.Helper()
	ctx := context.Background()
	s, err := b.JS.Stream(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := b.JS.DeleteStream(ctx, name); err != nil {
		t.Fatal(err)
	}
	cfg := info.Config
	if _, err := b.JS.CreateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
}

// offlineBroker runs the node's broker store on its own while the node
// is down, for a test to change the log under it.
func offlineBroker(t *testing.T, dir string, fn func(b *broker.Embedded)) {
	t.Helper()
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	fn(b)
}

// wrongStreamOnly holds the node to the verdict: the tracker's reads and
// writes refuse wrong_stream naming why, while the knowledge base, on a
// log of its own, reads and writes as before and the node stays up.
func wrongStreamOnly(t *testing.T, n *node.Node, why string) {
	t.Helper()
	ctx := context.Background()
	_, err := n.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Stale})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeWrongStream || !strings.Contains(ref.Message, why) {
		t.Fatalf("a tracker read on a wrong log: %v, want wrong_stream naming %q", err, why)
	}
	_, err = n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "NEW", "new")
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeWrongStream {
		t.Fatalf("a tracker write on a wrong log: %v, want wrong_stream", err)
	}
	w, err := n.Pages().CreateSpace(ctx, engine.WriteOptions{}, "DOCS", "docs")
	enginetest.Landed(t, n, engine.DomainPages, w.WriteResult, err)
	if _, err := n.Pages().ListSpaces(ctx, engine.ReadOptions{Level: engine.Linearizable}); err != nil {
		t.Fatalf("the knowledge base beside a wrong tracker log: %v", err)
	}
	if ref := n.Replica(engine.DomainTracker).OutOfService(); ref == nil || ref.Code != engine.CodeWrongStream {
		t.Fatalf("the tracker's copy stays in service on a wrong log: %v", ref)
	}
}

// TestRecreatedStreamFoundAtBoot: the tracker's stream deleted and created
// again while the node was down is found at boot from the broker's own
// creation instant: statelog_stream_recreated (component engine), the
// tracker refusing wrong_stream, the node up with its other domain serving.
func TestRecreatedStreamFoundAtBoot(t *testing.T) {
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	createItems(t, n, "ENG", 2)
	n.Close()
	offlineBroker(t, dir, func(b *broker.Embedded) { recreateStream(t, b, engine.StreamTracker) })
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	ls := rec.Lines(statelog.EvStreamRecreated)
	if len(ls) != 1 || ls[0].Attrs[engine.LogComponent] != engine.ComponentEngine || ls[0].Attrs[engine.LogStream] != engine.StreamTracker {
		t.Fatalf("%s lines: %+v", statelog.EvStreamRecreated, ls)
	}
	wrongStreamOnly(t, n, "created again")
}

// TestRecreatedStreamFoundByAWriteAtZero: under a running node, a write
// at an expectation of zero (its subject holds nothing) reads the
// stream's creation instant before it appends, and refuses wrong_stream
// on a stream created again, having written nothing: a create_work_item
// (a record about its new item) and a create_project (about the new
// project) alike.
func TestRecreatedStreamFoundByAWriteAtZero(t *testing.T) {
	for name, write := range map[string]func(*node.Node) error{
		"create_work_item": func(n *node.Node) error {
			_, err := n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "onto another stream"})
			return err
		},
		"create_project": func(n *node.Node) error {
			_, err := n.Tracker().CreateProject(context.Background(), engine.WriteOptions{}, "OPS", "Operations")
			return err
		},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			n := enginetest.OpenNode(t, node.Config{DataDir: dir, HeartbeatInterval: time.Hour})
			mustProject(t, n.Tracker(), "ENG")
			createItems(t, n, "ENG", 1)
			recreateStream(t, n.Broker(), engine.StreamTracker)
			err := write(n)
			if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeWrongStream {
				t.Fatalf("%s on a recreated stream: %v, want wrong_stream", name, err)
			}
			info, err := n.Log(engine.DomainTracker).Info(context.Background())
			if err != nil || info.LastSeq != 0 {
				t.Fatalf("the recreated stream holds %d records (%v): the refused %s appended", info.LastSeq, err, name)
			}
			wrongStreamOnly(t, n, "created again")
		})
	}
}

// TestRecreatedStreamFoundByTheHeartbeat: with no write to find it, the
// position heartbeat compares the stream's creation instant, stops the
// tracker's applier (statelog_applier_stopped naming the recreated
// stream) and publishes the verdict in the positions register.
func TestRecreatedStreamFoundByTheHeartbeat(t *testing.T) {
	dir := t.TempDir()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, HeartbeatInterval: 20 * time.Millisecond, Logger: rec.Logger()})
	mustProject(t, n.Tracker(), "ENG")
	recreateStream(t, n.Broker(), engine.StreamTracker)
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		a, err := n.Retention().Answer(context.Background())
		if err != nil {
			return err
		}
		for _, nf := range a.Nodes {
			for _, d := range nf.Domains {
				if d.Domain == engine.DomainTracker && d.WrongLog == statelog.WrongLogRecreated {
					return nil
				}
			}
		}
		return fmt.Errorf("no recreated verdict in the register yet")
	})
	if len(rec.Lines(statelog.EvStreamRecreated)) != 1 {
		t.Fatalf("%s lines: %+v", statelog.EvStreamRecreated, rec.Lines(statelog.EvStreamRecreated))
	}
	wrongStreamOnly(t, n, "created again")
}

// copyDir copies a directory tree (the broker's store, while it is down).
func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(dst, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// restoreStore puts an older copy of the broker's store back in place.
func restoreStore(t *testing.T, dir, copy string) {
	t.Helper()
	if err := os.RemoveAll(filepath.Join(dir, "stream")); err != nil {
		t.Fatal(err)
	}
	copyDir(t, copy, filepath.Join(dir, "stream"))
}

// TestRestoredBrokerFoundAtBoot: a broker store restored from an older
// copy keeps the stream's creation instant, and this node's checkpoint is
// past its end: the boot does not refuse, the tracker says
// statelog_log_diverged and refuses wrong_stream, the register marks
// log_diverged, and the knowledge base serves.
func TestRestoredBrokerFoundAtBoot(t *testing.T) {
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	n.Close()
	older := filepath.Join(t.TempDir(), "stream")
	copyDir(t, filepath.Join(dir, "stream"), older)
	n = enginetest.OpenNode(t, node.Config{DataDir: dir})
	createItems(t, n, "ENG", 3)
	n.Close()
	restoreStore(t, dir, older)
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger(), HeartbeatInterval: 20 * time.Millisecond})
	if ls := rec.Lines(statelog.EvLogDiverged); len(ls) != 1 || ls[0].Level.String() != "ERROR" || ls[0].Attrs["case"] != statelog.WrongLogRestored {
		t.Fatalf("%s lines: %+v", statelog.EvLogDiverged, ls)
	}
	wrongStreamOnly(t, n, "restored")
	markedDiverged(t, n)
}

// markedDiverged waits for the register to carry this node's
// log_diverged mark for the tracker.
func markedDiverged(t *testing.T, n *node.Node) {
	t.Helper()
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		a, err := n.Retention().Answer(context.Background())
		if err != nil {
			return err
		}
		for _, nf := range a.Nodes {
			for _, d := range nf.Domains {
				if d.Domain == engine.DomainTracker && d.LogDiverged {
					return nil
				}
			}
		}
		return fmt.Errorf("the register does not mark the tracker log_diverged yet")
	})
}

// TestDivergedLogFoundAtBoot: a restored broker written past this node's
// rows holds, at the node's checkpoint, another record than the one it
// consumed there (same sequence, another broker instant): the boot finds
// it, statelog_log_diverged, and the tracker refuses wrong_stream.
func TestDivergedLogFoundAtBoot(t *testing.T) {
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	n.Close()
	older := filepath.Join(t.TempDir(), "stream")
	copyDir(t, filepath.Join(dir, "stream"), older)
	n = enginetest.OpenNode(t, node.Config{DataDir: dir})
	createItems(t, n, "ENG", 2)
	n.Close()
	restoreStore(t, dir, older)
	// Another writer goes on from the restored copy, past this node's
	// checkpoint: other records at the same sequences.
	offlineBroker(t, dir, func(b *broker.Embedded) {
		for i := 0; i < 4; i++ {
			if _, err := b.JS.Publish(context.Background(), statelog.SubjectPrefix(engine.DomainTracker)+fmt.Sprintf("other.%d", i), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	})
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	if ls := rec.Lines(statelog.EvLogDiverged); len(ls) != 1 || ls[0].Attrs["case"] != statelog.WrongLogDiverged {
		t.Fatalf("%s lines: %+v", statelog.EvLogDiverged, ls)
	}
	wrongStreamOnly(t, n, "another record")
}

// TestLogTruncatedByAPeersRows: the positions register shows a peer on the
// same stream and generation whose rows are past the log's end (what a
// broker restored from an older copy looks like from a node whose rows
// are the copy's age). The heartbeat says statelog_log_truncated, this
// node's writes of that domain refuse log_truncated while its reads go
// on; once the peer is gone from the register (rebuilt), the verdict
// clears (statelog_log_truncated_cleared) and writes land again.
func TestLogTruncatedByAPeersRows(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), HeartbeatInterval: 20 * time.Millisecond, Logger: rec.Logger()})
	mustProject(t, n.Tracker(), "ENG")
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peer := fleet.Position{Node: "n7", Domain: engine.DomainTracker, Stream: engine.StreamTracker, Generation: 1,
		Seq: info.LastSeq + 40, AppliedThrough: info.LastSeq + 40, StreamCreatedAt: info.Created.UTC(), BeatAt: time.Now().UTC()}
	b, _ := json.Marshal(peer)
	kv := n.Register().KV()
	if _, err := kv.Put(ctx, fleet.Key("n7", engine.DomainTracker), b); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if len(rec.Lines(statelog.EvLogTruncated)) == 0 {
			return fmt.Errorf("no %s yet", statelog.EvLogTruncated)
		}
		return nil
	})
	if l := rec.Lines(statelog.EvLogTruncated)[0]; l.Attrs["peer"] != "n7" || l.Level.String() != "ERROR" {
		t.Fatalf("%s: %+v", statelog.EvLogTruncated, l)
	}
	_, err = n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "OPS", "ops")
	if engine.CodeOf(err) != engine.CodeLogTruncated {
		t.Fatalf("a write while a peer holds what the log lost: %v, want log_truncated", err)
	}
	if _, err := n.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Linearizable}); err != nil {
		t.Fatalf("a read while the log is truncated: %v", err)
	}
	if err := kv.Delete(ctx, fleet.Key("n7", engine.DomainTracker)); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if len(rec.Lines(statelog.EvLogTruncatedCleared)) == 0 {
			return fmt.Errorf("no %s yet", statelog.EvLogTruncatedCleared)
		}
		return nil
	})
	w, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "OPS", "ops")
	enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
}

// TestUnreadGenerationsJudgeNothing: a beat that reads the positions
// register but not the trim floors cannot establish which generation the
// fleet is on. It writes statelog_generations_unread and judges neither
// that nor the truncation: a peer past the log's end, which would
// otherwise fence this node's writes log_truncated, changes nothing.
func TestUnreadGenerationsJudgeNothing(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), HeartbeatInterval: 20 * time.Millisecond, Logger: rec.Logger()})
	mustProject(t, n.Tracker(), "ENG")
	if err := n.Broker().JS.DeleteStream(ctx, fleet.FloorBucket); err != nil {
		t.Fatal(err)
	}
	waitLines(t, rec, statelog.EvGenerationsUnread, 1)
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	peer := fleet.Position{Node: "n7", Domain: engine.DomainTracker, Stream: engine.StreamTracker, Generation: 1,
		Seq: info.LastSeq + 40, AppliedThrough: info.LastSeq + 40, StreamCreatedAt: info.Created.UTC(), BeatAt: time.Now().UTC()}
	b, _ := json.Marshal(peer)
	if _, err := n.Register().KV().Put(ctx, fleet.Key("n7", engine.DomainTracker), b); err != nil {
		t.Fatal(err)
	}
	// Three beats after the peer's position is in the register.
	waitLines(t, rec, statelog.EvGenerationsUnread, len(rec.Lines(statelog.EvGenerationsUnread))+3)
	if l := rec.Lines(statelog.EvLogTruncated); len(l) > 0 {
		t.Fatalf("a beat that could not read the floors judged the truncation: %+v", l[0])
	}
	if l := rec.Lines(statelog.EvGenerationsUnread)[0]; l.Attrs[engine.LogComponent] != engine.ComponentEngine || l.Attrs[engine.LogErr] == nil {
		t.Fatalf("%s: %+v", statelog.EvGenerationsUnread, l)
	}
	w, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "OPS", "ops")
	enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
}

// waitLines waits until rec holds at least count lines named msg.
func waitLines(t *testing.T, rec *enginetest.Recorder, msg string, count int) {
	t.Helper()
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if got := len(rec.Lines(msg)); got < count {
			return fmt.Errorf("%d %s lines, want %d", got, msg, count)
		}
		return nil
	})
}
