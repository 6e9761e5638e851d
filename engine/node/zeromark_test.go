package node_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// Creation marks (statelog's zeromark.go) run on a replicated log by
// default; these tests make a node of one use them (MarkedZeroWrites)
// against its real embedded broker, whose append with
// Nats-Expected-Last-Subject-Sequence-Subject is the same server code a
// cluster's stream leader runs.

// markedNode opens a node whose writes at zero ride creation marks, with
// project ENG, and waits until a create has made a mark (the first asks,
// and its slot is marked behind it).
func markedNode(t *testing.T) *node.Node {
	t.Helper()
	n := enginetest.OpenNode(t, node.Config{DataDir: t.TempDir(), HeartbeatInterval: time.Hour, MarkedZeroWrites: true})
	mustProject(t, n.Tracker(), "ENG")
	createItems(t, n, "ENG", 1)
	marksSettled(t, n, 1)
	return n
}

// marksSettled waits until the tracker has made at least made marks and
// none is under way.
func marksSettled(t *testing.T, n *node.Node, made int64) statelog.MarkCounts {
	t.Helper()
	var mc statelog.MarkCounts
	enginetest.CheckFor(t, 30*time.Second, 5*time.Millisecond, func() error {
		mc = n.Replica(engine.DomainTracker).Marks()
		if mc.Made < made || mc.Marking > 0 {
			return fmt.Errorf("marks %+v, want %d made and none under way", mc, made)
		}
		return nil
	})
	return mc
}

// TestCreationMarksSpareTheQuestion: once a mark is made, creates one at
// a time ride it and ask the stream's creation instant no more; each
// applies; and the mark on the log is a barrier record at format version
// 1, which every build applies as nothing (the format decision: a mark is
// no new kind, so no build retains it during a rolling upgrade).
func TestCreationMarksSpareTheQuestion(t *testing.T) {
	n := markedNode(t)
	before := n.Replica(engine.DomainTracker).Marks()
	createItems(t, n, "ENG", 5)
	after := n.Replica(engine.DomainTracker).Marks()
	if after.Rode-before.Rode != 5 || after.Asked != before.Asked || after.Refused != 0 {
		t.Fatalf("marks before %+v, after five creates %+v: want five that rode a mark and none that asked", before, after)
	}
	items, err := n.Tracker().ListWorkItems(context.Background(), engine.ReadOptions{}, tracker.ListFilter{Project: "ENG"})
	if err != nil || len(items.Items) != 6 {
		t.Fatalf("ENG lists %d items (%v), want 6", len(items.Items), err)
	}

	created := n.Replica(engine.DomainTracker)
	cp, err := created.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m, err := n.Log(engine.DomainTracker).LastOnSubject(context.Background(), statelog.MarkSubject(engine.DomainTracker, cp.StreamCreatedAt, "n1", 1))
	if err != nil {
		t.Fatalf("the first mark's subject holds nothing: %v", err)
	}
	rec, err := record.Decode(m.Data)
	if err != nil || rec.Kind != record.KindBarrier || rec.Version != 1 {
		t.Fatalf("the mark decodes as %+v (%v), want a barrier at version 1", rec, err)
	}
	if old, err := record.DecodeUpTo(m.Data, 1); err != nil || old.Kind != record.KindBarrier {
		t.Fatalf("a build reading format 1 alone decodes the mark as %+v (%v), want a barrier", old, err)
	}
}

// TestRecreatedStreamRefusesAMarkedCreate: a create that rides a mark on
// a stream deleted and created again is refused by the broker (the mark's
// subject holds nothing there), asks the creation instant, and refuses
// wrong_stream with nothing appended, as a create that asked first does.
func TestRecreatedStreamRefusesAMarkedCreate(t *testing.T) {
	n := markedNode(t)
	recreateStream(t, n.Broker(), engine.StreamTracker)
	_, err := n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "onto another stream"})
	if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeWrongStream {
		t.Fatalf("a marked create on a recreated stream: %v, want wrong_stream", err)
	}
	if mc := n.Replica(engine.DomainTracker).Marks(); mc.Refused != 1 {
		t.Fatalf("marks %+v: want the create's mark refused once", mc)
	}
	info, err := n.Log(engine.DomainTracker).Info(context.Background())
	if err != nil || info.LastSeq != 0 {
		t.Fatalf("the recreated stream holds %d records (%v): the refused create appended", info.LastSeq, err)
	}
	wrongStreamOnly(t, n, "created again")
}

// TestPurgedMarkIsMadeAgain: a mark the trim purged fails the append
// that rides it; the write asks that round and applies, and its slot is
// marked again behind it, which the next create rides.
func TestPurgedMarkIsMadeAgain(t *testing.T) {
	n := markedNode(t)
	ctx := context.Background()
	l := n.Log(engine.DomainTracker)
	info, err := l.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.PurgeThrough(ctx, info.LastSeq); err != nil {
		t.Fatal(err)
	}
	before := n.Replica(engine.DomainTracker).Marks()
	createItems(t, n, "ENG", 1)
	mid := marksSettled(t, n, before.Made+1)
	if mid.Refused != before.Refused+1 || mid.Asked != before.Asked+1 {
		t.Fatalf("marks before %+v, after a create past a purged mark %+v: want it refused once and asked once", before, mid)
	}
	createItems(t, n, "ENG", 1)
	if after := n.Replica(engine.DomainTracker).Marks(); after.Rode != mid.Rode+1 || after.Asked != mid.Asked {
		t.Fatalf("marks %+v, then %+v: want the next create riding the new mark", mid, after)
	}
}

// TestMarkSubjectIsOneToken: a node name that is not one subject token
// is hashed into one, so a mark's subject stays under the domain's.
func TestMarkSubjectIsOneToken(t *testing.T) {
	at := time.Unix(0, 42)
	if got := statelog.MarkSubject(engine.DomainTracker, at, "n1", 3); got != "crewlet.tracker.mark.42.n1.3" {
		t.Fatalf("MarkSubject = %q", got)
	}
	got := statelog.MarkSubject(engine.DomainTracker, at, "a.b c", 3)
	if strings.Count(got, ".") != 5 || strings.Contains(got, " ") {
		t.Fatalf("MarkSubject of a dotted node = %q, want six tokens", got)
	}
}

// TestConcurrentCreatesRideMarks: 16 writers filing creates at once each
// hold a mark of their own (a slot), so none is refused for its mark;
// every create applies once, and the marks made stay within a replica's
// 64 slots (a writer whose last slot is still being marked takes another,
// so there may be more slots than writers).
func TestConcurrentCreatesRideMarks(t *testing.T) {
	n := markedNode(t)
	const writers, each = 16, 5
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				r, err := n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("w%d-%d", w, i)})
				if err == nil && r.Outcome != engine.Applied {
					err = fmt.Errorf("outcome %s", r.Outcome)
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	mc := marksSettled(t, n, 1)
	t.Logf("marks after %d creates by %d writers: %+v", writers*each, writers, mc)
	if mc.Refused != 0 || mc.Made > 64 || mc.Rode == 0 {
		t.Fatalf("marks %+v after %d concurrent creates: want none refused, at most 64 made, some ridden", mc, writers*each)
	}
	items, err := n.Tracker().ListWorkItems(context.Background(), engine.ReadOptions{}, tracker.ListFilter{Project: "ENG", Limit: 200})
	if err != nil || len(items.Items) != 1+writers*each {
		t.Fatalf("ENG lists %d items (%v), want %d", len(items.Items), err, 1+writers*each)
	}
}
