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
	"github.com/crewlet/crewlet/engine/tracker"
)

// createItems files n work items in project p and returns the position
// each landed at.
func createItems(t *testing.T, n *node.Node, p string, count int) []engine.Position {
	t.Helper()
	var out []engine.Position
	for i := 0; i < count; i++ {
		w, err := n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{}, tracker.NewWorkItem{Project: p, Title: fmt.Sprintf("item %d", i)})
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
		pos, err := engine.ParsePosition(w.Position)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pos)
	}
	return out
}

func dropDatabase(t *testing.T, dir string) {
	t.Helper()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, "crewlet-replicated.db"+suffix)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// TestHoleStopsTheApplier: a record deleted from the middle of the log
// (the broker's delete-message, while the node is down and its database
// gone, so it replays) is a hole that will not close. The applier stops
// with statelog_applier_stopped naming the stream, the position its rows
// froze at and why; it never counts the hole as applied, and every read
// of the domain refuses stalled.
func TestHoleStopsTheApplier(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	pos := createItems(t, n, "ENG", 3)
	n.Close()
	dropDatabase(t, dir)
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		t.Fatal(err)
	}
	s, err := b.JS.Stream(ctx, engine.StreamTracker)
	if err == nil {
		err = s.DeleteMsg(ctx, pos[1].Seq)
	}
	b.Close()
	if err != nil {
		t.Fatal(err)
	}
	rec := enginetest.NewRecorder()
	n = enginetest.OpenNode(t, node.Config{DataDir: dir, Logger: rec.Logger()})
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		if len(rec.Lines(engine.EvApplierStopped)) == 0 {
			return fmt.Errorf("no %s line", engine.EvApplierStopped)
		}
		return nil
	})
	ls := rec.Lines(engine.EvApplierStopped)
	l := ls[0]
	frozen, err := engine.ParsePosition(fmt.Sprint(l.Attrs[engine.LogPosition]))
	why := fmt.Sprint(l.Attrs["why"])
	if len(ls) != 1 || l.Level.String() != "ERROR" || l.Attrs[engine.LogStream] != engine.StreamTracker || err != nil ||
		frozen.Seq >= pos[1].Seq || !strings.Contains(why, "hole") || !strings.Contains(why, fmt.Sprint(pos[1].Seq)) ||
		l.Attrs[engine.LogComponent] != engine.ComponentStatelog {
		t.Fatalf("stop lines: %+v", ls)
	}
	if got := n.Replica(engine.DomainTracker).Applied(); got >= pos[1].Seq {
		t.Fatalf("the applier moved to %d, over the hole at %d", got, pos[1].Seq)
	}
	_, err = n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, "ENG-1")
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeStalled || !strings.Contains(ref.Message, "hole") {
		t.Fatalf("a stale read of a stopped domain: %v", err)
	}
}

// TestTrimAlone: a lone node trims its log through its own position
// once a backup (a real snapshot in its repository) covers it: it is the
// only node the trim waits for, and the age floor stands open. The floor
// is published with the term holding it, the broker really purges, and
// the retention answer names it. Before the backup the gate holds the
// floor at zero, naming no snapshot. Started again on an empty database
// it is below the floor: with no peer to adopt from, the boot refuses
// below_floor naming the log.
func TestTrimAlone(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cfg := node.Config{DataDir: dir, HeartbeatInterval: 20 * time.Millisecond,
		Trim: node.TrimConfig{MinAge: time.Nanosecond, Interval: time.Hour}}
	n := enginetest.OpenNode(t, cfg)
	mustProject(t, n.Tracker(), "ENG")
	pos := createItems(t, n, "ENG", 4)
	last := pos[len(pos)-1].Seq
	waitRegistered(t, n, "n1", engine.DomainTracker, last)
	floors, err := n.Trim().Once(ctx)
	if f := floorOf(floors, engine.DomainTracker); err != nil || f.Through != 0 || f.Term != fleet.TermBackup || !strings.Contains(f.Holder, "no stored snapshot") {
		t.Fatalf("floor with no backup: %+v %v", f, err)
	}
	m, err := n.Backup(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	floors, err = n.Trim().Once(ctx)
	f := floorOf(floors, engine.DomainTracker)
	if reached := m.Domains[string(engine.DomainTracker)].Seq; err != nil || f.Through < last || f.Through > reached {
		t.Fatalf("floor %+v (%v), want through at least %d and at most the snapshot's %d", f, err, last, reached)
	}
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil || info.FirstSeq != f.Through+1 {
		t.Fatalf("the log starts at %d (%v), want %d: the purge did not run", info.FirstSeq, err, f.Through+1)
	}
	a, err := n.Retention().Answer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range a.Logs {
		if l.Domain == engine.DomainTracker && (l.Floor == nil || l.Floor.Through != f.Through || l.Floor.Term != f.Term) {
			t.Fatalf("retention answer's tracker log: %+v", l)
		}
	}
	n.Close()
	dropDatabase(t, dir)
	cfg.Retention.AdoptWait = time.Second
	cfg.Logger = enginetest.Logger()
	// With no peer to donate, the node opens held: its tracker reads and
	// writes refuse below_floor (and clear on their own once a peer can
	// donate, which a lone node never has).
	held, err := node.Open(ctx, cfg)
	if err != nil {
		t.Fatalf("boot below the floor with no peer: %v, want the node open and held", err)
	}
	defer held.Close()
	_, err = held.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Stale})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeBelowFloor {
		t.Fatalf("a read on a node held below the floor: %v, want below_floor", err)
	}
}

// waitRegistered waits until node's published position in d reaches seq.
func waitRegistered(t *testing.T, n *node.Node, name string, d engine.Domain, seq uint64) {
	t.Helper()
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		all, err := fleet.ReadAll(context.Background(), n.Register().KV())
		if err != nil {
			return err
		}
		for _, p := range all {
			if p.Node == name && p.Domain == d && p.Seq >= seq {
				return nil
			}
		}
		return fmt.Errorf("%s has not published %s at %d", name, d, seq)
	})
}

func floorOf(fs []fleet.Floor, d engine.Domain) fleet.Floor {
	for _, f := range fs {
		if f.Domain == d {
			return f
		}
	}
	return fleet.Floor{}
}

// TestRetentionAnswerAlwaysHasFloor: before the trim has removed anything
// every log's figures carry the floor, through 0 with no term, and an
// empty floor_unread: the JSON fields are there for a script to read
// whatever their values.
func TestRetentionAnswerAlwaysHasFloor(t *testing.T) {
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir()})
	a, err := n.Retention().Answer(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Logs) == 0 {
		t.Fatal("the retention answer has no logs")
	}
	for _, l := range a.Logs {
		b, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		var got struct {
			Floor       *struct{ Through *uint64 } `json:"floor"`
			FloorUnread *string                    `json:"floor_unread"`
		}
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatal(err)
		}
		if got.Floor == nil || got.Floor.Through == nil || *got.Floor.Through != 0 || got.FloorUnread == nil || *got.FloorUnread != "" {
			t.Errorf("%s log before any trim: %s, want floor {through: 0, …} and floor_unread \"\"", l.Domain, b)
		}
	}
}
