package turns_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/turns"
)

// openUnits opens the register on a real embedded broker of its own,
// with the test's clock.
func openUnits(t *testing.T, clock engine.Clock) *turns.Units {
	t.Helper()
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: t.TempDir(), Sync: broker.Sync{Always: true}, MaxStore: 64 << 20, Logger: enginetest.Logger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u, err := turns.Open(ctx, b.JS, 1, clock, enginetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// TestUnitStartInheritedFor29Days: every call of a unit derives from the
// instant its first call began, for 29 days: a re-run repeating a call
// gets its place back, a new call the next place. Past 29 days the
// attempt mints at its own instant and records it (the old calls' ids are
// ones no ledger vouches for), and a later attempt inherits that one.
func TestUnitStartInheritedFor29Days(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	clock := enginetest.NewClock(t0)
	u := openUnits(t, clock)
	ctx := ctxT(t)
	call := func(tool, digest string) (time.Time, int) {
		t.Helper()
		start, n, err := u.Call(ctx, "unit-7", tool, digest)
		if err != nil {
			t.Fatal(err)
		}
		return start, n
	}
	if s, n := call("create_work_item", "d1"); !s.Equal(t0) || n != 0 {
		t.Fatalf("first call: %v #%d", s, n)
	}
	clock.Advance(28 * 24 * time.Hour)
	if s, n := call("create_work_item", "d2"); !s.Equal(t0) || n != 1 {
		t.Fatalf("a second call 28 days on: %v #%d, want %v #1", s, n, t0)
	}
	if s, n := call("create_work_item", "d1"); !s.Equal(t0) || n != 0 {
		t.Fatalf("the first call again: %v #%d, want %v #0", s, n, t0)
	}
	if s, n := call("comment_on_work_item", "d1"); !s.Equal(t0) || n != 0 {
		t.Fatalf("another tool counts its own calls: %v #%d", s, n)
	}
	// Exactly MaxAge old: still inherited.
	clock.Advance(turns.MaxAge - 28*24*time.Hour)
	if s, _ := call("create_work_item", "d1"); !s.Equal(t0) {
		t.Fatalf("at exactly 29 days: %v, want %v", s, t0)
	}
	// One second past: this attempt mints at its own instant.
	clock.Advance(time.Second)
	t1 := clock.Now()
	if s, n := call("create_work_item", "d2"); !s.Equal(t1) || n != 0 {
		t.Fatalf("past 29 days: %v #%d, want %v #0 (calls counted anew)", s, n, t1)
	}
	clock.Advance(3 * 24 * time.Hour)
	if s, n := call("create_work_item", "d2"); !s.Equal(t1) || n != 0 {
		t.Fatalf("a later attempt: %v #%d, want the restarted start %v #0", s, n, t1)
	}
	started, err := u.Start(ctx, "unit-7", "seat-a", "n1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !started.UnitStart.Equal(t1) || !started.Restarted {
		t.Fatalf("a turn of the restarted unit: %+v", started)
	}
	// A turn starting a unit 30 days old restarts it too.
	if _, err := u.Start(ctx, "unit-8", "seat-a", "n1", nil); err != nil {
		t.Fatal(err)
	}
	clock.Advance(30 * 24 * time.Hour)
	s8, err := u.Start(ctx, "unit-8", "seat-a", "n1", nil)
	if err != nil || !s8.UnitStart.Equal(clock.Now()) || !s8.Restarted || s8.Attempt != 2 {
		t.Fatalf("a turn 30 days on: %+v %v", s8, err)
	}
}

// TestTurnLifecycle: a turn starts (from a wake's trigger), ends with an
// outcome once; ending it again the same way answers the same turn, and
// another way refuses; the next attempt names the one before it; a unit
// with no turn has nothing to end.
func TestTurnLifecycle(t *testing.T) {
	clock := enginetest.NewClock(time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC))
	u := openUnits(t, clock)
	ctx := ctxT(t)
	trigger := engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: 42}
	s1, err := u.Start(ctx, "u1", "seat-a", "n1", &trigger)
	if err != nil {
		t.Fatal(err)
	}
	if s1.Attempt != 1 || s1.Trigger != trigger.Token() || s1.Previous != nil || s1.Seat != "seat-a" || s1.Node != "n1" {
		t.Fatalf("first turn: %+v", s1)
	}
	clock.Advance(time.Minute)
	ended, err := u.End(ctx, "u1", turns.OutcomeDone, "filed ENG-8")
	if err != nil || ended.Outcome != turns.OutcomeDone || ended.EndedAt == nil || !ended.EndedAt.Equal(clock.Now()) {
		t.Fatalf("end: %+v %v", ended, err)
	}
	clock.Advance(time.Minute)
	again, err := u.End(ctx, "u1", turns.OutcomeDone, "filed ENG-8")
	if err != nil || !again.EndedAt.Equal(*ended.EndedAt) {
		t.Fatalf("ended again alike: %+v %v", again, err)
	}
	var ee *turns.EndedError
	if _, err := u.End(ctx, "u1", turns.OutcomeFailed, ""); !errors.As(err, &ee) || ee.Turn.Outcome != turns.OutcomeDone {
		t.Fatalf("ended again otherwise: %v", err)
	}
	if _, err := u.End(ctx, "u1", "maybe", ""); err == nil {
		t.Fatal("an outcome that is none of the outcomes was taken")
	}
	s2, err := u.Start(ctx, "u1", "seat-a", "n2", nil)
	if err != nil || s2.Attempt != 2 || s2.Previous == nil || s2.Previous.Outcome != turns.OutcomeDone || !s2.UnitStart.Equal(s1.UnitStart) {
		t.Fatalf("second turn: %+v %v", s2, err)
	}
	if _, err := u.End(ctx, "never-started", turns.OutcomeDone, ""); !errors.Is(err, turns.ErrNoTurn) {
		t.Fatalf("end of a unit never started: %v", err)
	}
	list, err := u.Turns(ctx, "u1")
	if err != nil || len(list) != 2 || list[1].EndedAt != nil {
		t.Fatalf("turns: %+v %v", list, err)
	}
}

// TestConcurrentCallsOfOneUnit: calls of one unit racing on two
// goroutines each get a place of their own, and a call repeated gets the
// same place.
func TestConcurrentCallsOfOneUnit(t *testing.T) {
	u := openUnits(t, engine.SystemClock{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	got := make([]int, 8)
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, n, err := u.Call(ctx, "u", "create_work_item", fmt.Sprint("d", i))
			if err != nil {
				t.Error(err)
			}
			got[i] = n
		}()
	}
	wg.Wait()
	seen := map[int]bool{}
	for i, n := range got {
		if seen[n] {
			t.Fatalf("two calls got place %d: %v", n, got)
		}
		seen[n] = true
		if _, again, _ := u.Call(ctx, "u", "create_work_item", fmt.Sprint("d", i)); again != n {
			t.Fatalf("call d%d again: #%d, want #%d", i, again, n)
		}
	}
}
