package node_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

func mustProject(t *testing.T, svc *tracker.Service, key string) {
	t.Helper()
	pw, err := svc.CreateProject(context.Background(), engine.WriteOptions{}, key, key+" project")
	if err != nil || (pw.Outcome != engine.Applied && pw.Outcome != engine.Pending) {
		t.Fatalf("create project: %+v %v", pw, err)
	}
	if pw.Outcome == engine.Pending {
		// Durable: wait for this node to apply it, as a caller would.
		p, _ := engine.ParsePosition(pw.Position)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := svc.Replica().WaitApplied(ctx, p.Seq); err != nil {
			t.Fatalf("create project pending at %s: %v", pw.Position, err)
		}
	}
}

func lastSeq(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	return enginetest.LastWrite(t, n, engine.DomainTracker)
}

func count(t *testing.T, n *node.Node, q string, args ...any) int {
	t.Helper()
	var c int
	if err := n.DB().QueryRow(q, args...).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestChildKilledBeforeApplyCommit: a node in a child process is killed
// with SIGKILL after its record is on the log and before the apply commit.
// After restart the record is applied exactly once, and the retried write
// is answered from the ledger without publishing.
func TestChildKilledBeforeApplyCommit(t *testing.T) {
	if os.Getenv("CREWLET_CHILD_DIR") != "" {
		childKilledBeforeCommit()
		return
	}
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	mustProject(t, n.Tracker(), "ENG")
	n.Close()

	op, err := ledger.MintFor(time.Now(), "create_work_item", "ENG", "")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildKilledBeforeApplyCommit$")
	cmd.Env = append(os.Environ(), "CREWLET_CHILD_DIR="+dir, "CREWLET_CHILD_OP="+op.String())
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child did not die by SIGKILL: %v\n%s", err, out)
	}

	n = enginetest.OpenNode(t, node.Config{DataDir: dir})
	before := lastSeq(t, n)
	enginetest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n.Replica(engine.DomainTracker).Applied() < before {
			return fmt.Errorf("applied %d < %d", n.Replica(engine.DomainTracker).Applied(), before)
		}
		return nil
	})
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 1 {
		t.Fatalf("%d items after restart, want 1", c)
	}
	if c := count(t, n, `SELECT count(*) FROM statelog_ledger WHERE op_id = ?`, op.String()); c != 1 {
		t.Fatalf("%d ledger rows for the op, want 1", c)
	}
	iw, err := n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{OpID: op.String()}, tracker.NewWorkItem{Project: "ENG", Title: "killed"})
	if err != nil || iw.Outcome != engine.Applied || iw.Item == nil || iw.Item.Key != "ENG-1" {
		t.Fatalf("retry: %+v %v", iw, err)
	}
	if iw.Position != fmt.Sprintf("CREWLET_TRACKER_LOG@1:%d", before) {
		t.Fatalf("retry answered at %s, want seq %d", iw.Position, before)
	}
	if after := lastSeq(t, n); after != before {
		t.Fatalf("retry published: last seq %d -> %d", before, after)
	}
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 1 {
		t.Fatalf("%d items after retry, want 1", c)
	}
}

// childKilledBeforeCommit runs in the child: the apply transaction of the
// create kills the process before it commits.
func childKilledBeforeCommit() {
	hooks := node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		time.Sleep(time.Minute)
		return nil
	}}
	n, err := node.Open(context.Background(), node.Config{Name: "n1", DataDir: os.Getenv("CREWLET_CHILD_DIR"), Hooks: hooks, Logger: enginetest.Logger()})
	if err != nil {
		fmt.Println("child open:", err)
		os.Exit(3)
	}
	_, err = n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{OpID: os.Getenv("CREWLET_CHILD_OP")}, tracker.NewWorkItem{Project: "ENG", Title: "killed"})
	fmt.Println("child survived the apply:", err)
	os.Exit(4)
}

// TestRetryAfterDuplicateWindow: the broker no longer collapses the id, so
// only the ledger can; the retry is answered at the first position and
// publishes nothing. So too where the create rides a creation mark
// rather than an expectation of zero on its own subject (marks=true: what
// a replicated log does).
func TestRetryAfterDuplicateWindow(t *testing.T) {
	for _, marks := range []bool{false, true} {
		t.Run(fmt.Sprintf("marks=%v", marks), func(t *testing.T) { retryAfterDuplicateWindow(t, marks) })
	}
}

func retryAfterDuplicateWindow(t *testing.T, marks bool) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{Stream: node.StreamConfig{DuplicateWindow: 200 * time.Millisecond}, MarkedZeroWrites: marks})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	first, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "once"})
	if err != nil || first.Outcome != engine.Applied {
		t.Fatal(first, err)
	}
	upd, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", first.Item.Version, tracker.ItemPatch{Title: ptr("twice?")})
	if err != nil || upd.Outcome != engine.Applied {
		t.Fatal(upd, err)
	}
	time.Sleep(400 * time.Millisecond)
	before := lastSeq(t, n)
	again, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: first.OpID}, tracker.NewWorkItem{Project: "ENG", Title: "once"})
	if err != nil || again.Outcome != engine.Applied || again.Position != first.Position || again.Item.Key != "ENG-1" {
		t.Fatalf("create retry: %+v %v (first at %s)", again, err, first.Position)
	}
	// The update was conditioned on a version its own first copy moved:
	// deciding it again would refuse stale. It is answered instead.
	updAgain, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: upd.OpID}, "ENG-1", first.Item.Version, tracker.ItemPatch{Title: ptr("twice?")})
	if err != nil || updAgain.Outcome != engine.Applied || updAgain.Position != upd.Position {
		t.Fatalf("update retry: %+v %v", updAgain, err)
	}
	if after := lastSeq(t, n); after != before {
		t.Fatalf("retries published: %d -> %d", before, after)
	}
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 1 {
		t.Fatalf("%d items", c)
	}
}

func ptr[T any](v T) *T { return &v }

// TestConcurrentIfMatch: two updates with the same if_match, exactly one
// applied, the other refused stale naming the current version.
func TestConcurrentIfMatch(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	it, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "contended"})
	if err != nil {
		t.Fatal(err)
	}
	for round := 0; round < 10; round++ {
		cur, err := svc.GetWorkItem(ctx, lin(), "ENG-1")
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		results := make([]error, 2)
		outcomes := make([]engine.Outcome, 2)
		start := make(chan struct{})
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", cur.Item.Version, tracker.ItemPatch{Title: ptr(fmt.Sprintf("r%d-w%d", round, i))})
				results[i], outcomes[i] = err, w.Outcome
			}()
		}
		close(start)
		wg.Wait()
		applied, stale := 0, 0
		for i := range 2 {
			if results[i] == nil && outcomes[i] == engine.Applied {
				applied++
			} else if engine.CodeOf(results[i]) == engine.CodeStale {
				ref, _ := engine.AsRefusal(results[i])
				if ref.Fields["current_version"] == nil {
					t.Fatalf("stale names no current version: %v", ref)
				}
				stale++
			} else {
				t.Fatalf("unexpected: %v %v", outcomes[i], results[i])
			}
		}
		if applied != 1 || stale != 1 {
			t.Fatalf("round %d: applied=%d stale=%d", round, applied, stale)
		}
	}
	_ = it
}

// TestLinearizableReadsCoalesce: a linearizable read sees a write made
// just before by another client, and 50 concurrent reads share barriers.
func TestLinearizableReadsCoalesce(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{BarrierReads: true})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	done := make(chan error)
	go func() {
		_, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "seen"})
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	got, err := svc.GetWorkItem(ctx, lin(), "ENG-1")
	if err != nil || got.Item.Title != "seen" {
		t.Fatalf("%+v %v", got, err)
	}
	barrier := statelog.BarrierSubject(engine.DomainTracker)
	before, err := n.Log(engine.DomainTracker).SubjectCount(ctx, barrier)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var failed atomic.Int32
	start := make(chan struct{})
	for range 50 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			r, err := svc.GetWorkItem(ctx, lin(), "ENG-1")
			if err != nil || r.Level != engine.Linearizable || r.SeenThrough.Seq == 0 {
				failed.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d reads failed", failed.Load())
	}
	after, _ := n.Log(engine.DomainTracker).SubjectCount(ctx, barrier)
	appends := after - before
	t.Logf("50 concurrent linearizable reads made %d barrier appends", appends)
	if appends == 0 || appends > 10 {
		t.Fatalf("50 reads made %d barrier appends; want far fewer than 50", appends)
	}
}

// TestApplyFaultStallsAndRecovers: an injected apply failure logs
// statelog_apply_retrying, refuses reads stalled past the budget, and logs
// statelog_apply_recovered once the failure clears.
func TestApplyFaultStallsAndRecovers(t *testing.T) {
	ctx := context.Background()
	rec := enginetest.NewRecorder()
	var failing atomic.Bool
	hooks := node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		if failing.Load() {
			return errors.New("injected: disk on fire")
		}
		return nil
	}}
	n := enginetest.OpenNode(t, node.Config{Logger: rec.Logger(), Hooks: hooks, ApplyRetryBudget: 300 * time.Millisecond, WriteWait: 100 * time.Millisecond})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	failing.Store(true)
	w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "stuck"})
	if err != nil || w.Outcome != engine.Pending || w.Position == "" || w.Lag == nil {
		t.Fatalf("write during the fault: %+v %v", w, err)
	}
	enginetest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		_, err := svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, "ENG-1")
		if engine.CodeOf(err) != engine.CodeStalled {
			return fmt.Errorf("read answered %v", err)
		}
		return nil
	})
	_, err = svc.ListProjects(ctx, lin())
	if engine.CodeOf(err) != engine.CodeStalled {
		t.Fatalf("linearizable read during the fault: %v", err)
	}
	if l := rec.Lines(engine.EvApplyRetrying); len(l) != 1 {
		t.Fatalf("%d retrying lines", len(l))
	}
	if l := rec.Lines(engine.EvApplyFaulted); len(l) != 1 || l[0].Attrs[engine.LogComponent] != engine.ComponentStatelog {
		t.Fatalf("faulted lines: %+v", l)
	}
	failing.Store(false)
	enginetest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if len(rec.Lines(engine.EvApplyRecovered)) != 1 {
			return errors.New("not recovered")
		}
		return nil
	})
	l := rec.Lines(engine.EvApplyRecovered)[0]
	if l.Attrs["after"] == nil || l.Attrs[engine.LogErr] != "injected: disk on fire" {
		t.Fatalf("recovered line: %+v", l)
	}
	got, err := svc.GetWorkItem(ctx, lin(), "ENG-1")
	if err != nil || got.Item.Title != "stuck" {
		t.Fatalf("after recovery: %+v %v", got, err)
	}
	if len(rec.Lines(engine.EvApplyFaulted)) != 1 {
		t.Fatal("faulted logged more than once")
	}
}
