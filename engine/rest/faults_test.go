//go:build integration

package rest_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestBrokerUnreachable: with the broker stopped, a linearizable read is
// refused broker_unreachable with a hint, and stale still answers.
func TestBrokerUnreachable(t *testing.T) {
	r := newRig(t, node.Config{PublishTimeout: 300 * time.Millisecond})
	seed(t, r.n)
	r.n.Broker().Server.Shutdown()
	r.n.Broker().Server.WaitForShutdown()
	a := r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")).refused(t, engine.CodeBrokerUnreachable)
	if a.hint() <= 0 {
		t.Fatalf("no hint: %s", a.raw)
	}
	r.get("/api/v1/work-items/ENG-1").served(t, engine.Stale)
	r.get("/api/v1/work-items", q("read_level", "consistent_prefix")).served(t, engine.ConsistentPrefix)

	// A replication answer cannot measure its lag without the broker: it
	// weakens to consistent_prefix and says so.
	pctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	st := r.n.Replica(engine.DomainTracker).Replication(pctx)
	if st.Level != engine.ConsistentPrefix || st.Lag != nil || !strings.Contains(st.Note, "unmeasurable") || st.LogEnd != nil {
		t.Fatalf("replication answer without a broker: %+v", st)
	}
}

// TestBehindAndTooStale: a node held behind (its applier blocked mid-batch
// by a real wait) refuses behind with a hint derived from its drain, at
// every level that must reach a position; a tight max_lag_seq is
// too_stale; a loose one is answered with the lag.
func TestBehindAndTooStale(t *testing.T) {
	var hold atomic.Bool
	release := make(chan struct{})
	hooks := node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		if hold.Load() {
			<-release
		}
		return nil
	}}
	r := newRig(t, node.Config{Hooks: hooks, WriteWait: 100 * time.Millisecond})
	var released atomic.Bool
	free := func() {
		if released.CompareAndSwap(false, true) {
			hold.Store(false)
			close(release)
		}
	}
	t.Cleanup(free)
	seed(t, r.n)
	ctx := context.Background()
	hold.Store(true)
	w, err := r.n.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("held")})
	if err != nil || w.Outcome != engine.Pending {
		t.Fatalf("write while held: %+v %v", w, err)
	}
	for _, l := range []string{"session", "stale", "consistent_prefix"} {
		a := r.get("/api/v1/work-items/ENG-1", q("read_level", l), q("min_position", w.Position)).refused(t, engine.CodeBehind)
		if a.hint() <= 0 || a.body["position"].(map[string]any)["seq"] == nil {
			t.Fatalf("%s behind: %s", l, a.raw)
		}
	}
	// Ten more records land on the log from another writer.
	js := r.n.Broker().JS
	for i := 0; i < 10; i++ {
		data, _ := record.Encode(&record.Record{Kind: record.KindBarrier, Version: 1, Writer: "n2", Generation: 1, Subject: statelog.BarrierSubject(engine.DomainTracker)})
		if _, err := js.Publish(ctx, statelog.BarrierSubject(engine.DomainTracker), data); err != nil {
			t.Fatal(err)
		}
	}
	// A linearizable read establishes the log's end past them (at one
	// replica by asking the log, appending nothing), so it is behind too,
	// and this node learns where the log ends: the held write and the ten.
	r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")).refused(t, engine.CodeBehind)
	a := r.get("/api/v1/work-items/ENG-1", q("max_lag_seq", "5")).refused(t, engine.CodeTooStale)
	// Not worth coming back to this node for: no hint, the lag says how
	// far behind it is.
	if lag := a.body["lag"].(map[string]any); lag["seq"].(float64) < 11 || a.hint() != 0 {
		t.Fatalf("too_stale: %s", a.raw)
	}
	a = r.get("/api/v1/work-items/ENG-1", q("max_lag_seq", "1000")).served(t, engine.Stale)
	if lag := a.body["lag"].(map[string]any); lag["seq"].(float64) < 11 || a.body["item"].(map[string]any)["title"] != "first" {
		t.Fatalf("a loose bound: %s", a.raw)
	}
	free()
	a = r.get("/api/v1/work-items/ENG-1", q("read_level", "session"), q("min_position", w.Position)).served(t, engine.Session)
	if a.body["item"].(map[string]any)["title"] != "held" {
		t.Fatalf("after release: %s", a.raw)
	}
}

// TestStalled: an applier halted by an injected fault refuses stalled at
// every level that claims an age, and consistent_prefix is still
// answered; a position past the frozen prefix is stalled, not behind.
func TestStalled(t *testing.T) {
	var failing atomic.Bool
	hooks := node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		if failing.Load() {
			return errors.New("injected: disk on fire")
		}
		return nil
	}}
	r := newRig(t, node.Config{Hooks: hooks, ApplyRetryBudget: 100 * time.Millisecond, WriteWait: 100 * time.Millisecond})
	seed(t, r.n)
	failing.Store(true)
	t.Cleanup(func() { failing.Store(false) })
	w, err := r.n.Tracker().UpdateWorkItem(context.Background(), engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("frozen out")})
	if err != nil || w.Outcome != engine.Pending {
		t.Fatalf("write during the fault: %+v %v", w, err)
	}
	enginetest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		if a := r.get("/api/v1/work-items/ENG-1"); a.body["refused"] != "stalled" {
			return fmt.Errorf("stale read answered %s", a.raw)
		}
		return nil
	})
	for _, l := range []string{"linearizable", "stale"} {
		a := r.get("/api/v1/work-items/ENG-1", q("read_level", l)).refused(t, engine.CodeStalled)
		if !strings.Contains(a.body["message"].(string), "disk on fire") || a.body["error"] == nil {
			t.Fatalf("stalled names no error: %s", a.raw)
		}
	}
	r.get("/api/v1/work-items/ENG-1", q("read_level", "session"), q("min_position", w.Position)).refused(t, engine.CodeStalled)
	a := r.get("/api/v1/work-items/ENG-1", q("read_level", "consistent_prefix")).served(t, engine.ConsistentPrefix)
	if a.body["item"].(map[string]any)["title"] != "first" {
		t.Fatalf("the frozen prefix: %s", a.raw)
	}
	r.get("/api/v1/work-items/ENG-1", q("read_level", "consistent_prefix"), q("min_position", w.Position)).refused(t, engine.CodeStalled)
}
