package node_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/metrics"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// slowLog sends every append of a record (not a barrier) delay late,
// while delaying is set: its answer is that much later, and the record
// reaches the log (and the applier) no sooner either.
type slowLog struct {
	statelog.Log
	barrier  string
	delay    time.Duration
	delaying *atomic.Bool
	// infoDelay holds each Info while infoDelaying.
	infoDelay    time.Duration
	infoDelaying *atomic.Bool
}

func (s slowLog) Info(ctx context.Context) (statelog.LogInfo, error) {
	if s.infoDelaying != nil && s.infoDelaying.Load() {
		time.Sleep(s.infoDelay)
	}
	return s.Log.Info(ctx)
}

func (s slowLog) Publish(ctx context.Context, subject string, data []byte, msgID string, expectLast *uint64) (statelog.PubAck, error) {
	if subject != s.barrier && s.delaying.Load() {
		time.Sleep(s.delay)
	}
	return s.Log.Publish(ctx, subject, data, msgID, expectLast)
}

// TestWritePhasesSayWhereTheTimeWent: a write's time is observed by
// phase (crewlet_statelog_write_phase_seconds), each where it was spent.
// The append is sent 60 ms late and the applier's commit held 40 ms, by
// real means: a log that sends late and a hook inside the apply
// transaction. One update then shows one round of each phase; its append
// took the 60 ms, and since the record reached the applier only once it
// was sent, the append and the settle together took both holds; the
// phases add up to no more than the call (they do not overlap). Bounds
// from below only: a loaded machine adds time, never removes it. A write
// refused from the node's rows observes decides, and no append or settle.
// Only a create checks the stream's creation instant: with the broker's
// stream info held 30 ms, its check phase takes them, and the update
// observes no check.
func TestWritePhasesSayWhereTheTimeWent(t *testing.T) {
	const sendLate, commitLate, infoLate = 60 * time.Millisecond, 40 * time.Millisecond, 30 * time.Millisecond
	ctx := context.Background()
	var slow, slowInfo atomic.Bool
	n := enginetest.OpenNode(t, node.Config{Hooks: node.Hooks{
		WrapLog: func(d engine.Domain, l statelog.Log) statelog.Log {
			return slowLog{Log: l, barrier: statelog.BarrierSubject(d), delay: sendLate, delaying: &slow, infoDelay: infoLate, infoDelaying: &slowInfo}
		},
		BeforeApplyCommit: func(d engine.Domain, _ uint64) error {
			if slow.Load() && d == engine.DomainTracker {
				time.Sleep(commitLate)
			}
			return nil
		}}})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	beforeCreate := n.Metrics().WritePhases(string(engine.DomainTracker))
	slowInfo.Store(true)
	w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "phased"})
	slowInfo.Store(false)
	if err != nil || w.Outcome != engine.Applied {
		t.Fatalf("create: %+v %v", w, err)
	}
	create := n.Metrics().WritePhases(string(engine.DomainTracker)).Since(beforeCreate)
	if c := create[metrics.PhaseCheck]; c.Rounds != 1 || c.Took < infoLate {
		t.Errorf("a create's check: %d rounds, %v, want one round of at least the stream info's hold (%v)", c.Rounds, c.Took, infoLate)
	}

	before := n.Metrics().WritePhases(string(engine.DomainTracker))
	slow.Store(true)
	title := "phased again"
	called := time.Now()
	u, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, w.Item.Key, 0, tracker.ItemPatch{Title: &title})
	wall := time.Since(called)
	slow.Store(false)
	if err != nil || u.Outcome != engine.Applied {
		t.Fatalf("update: %+v %v", u, err)
	}
	after := n.Metrics().WritePhases(string(engine.DomainTracker))
	update := after.Since(before)
	for _, p := range metrics.Phases {
		want := uint64(1)
		if p == metrics.PhaseCheck {
			want = 0 // an update appends at its item's last record
		}
		if got := update[p].Rounds; got != want {
			t.Errorf("phase %s observed %d rounds of one update, want %d", p, got, want)
		}
	}
	decided, appended, settled := update[metrics.PhaseDecide].Took, update[metrics.PhaseAppend].Took, update[metrics.PhaseSettle].Took
	if decided+appended+settled > wall {
		t.Errorf("the phases (decide %v, append %v, settle %v) add up to more than the call (%v): they overlap", decided, appended, settled, wall)
	}
	if appended < sendLate {
		t.Errorf("the append took %v with the record sent %v late", appended, sendLate)
	}
	if appended+settled < sendLate+commitLate {
		t.Errorf("the append (%v) and the settle (%v) took less than the send's hold and the commit's after it (%v)", appended, settled, sendLate+commitLate)
	}

	if _, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-999", 0, tracker.ItemPatch{Title: &title}); engine.CodeOf(err) != engine.CodeNotFound {
		t.Fatalf("an update of an item that does not exist: %v", err)
	}
	refused := n.Metrics().WritePhases(string(engine.DomainTracker)).Since(after)
	if refused[metrics.PhaseDecide].Rounds == 0 {
		t.Error("a write refused from the node's rows observed no decide")
	}
	for _, p := range []string{metrics.PhaseCheck, metrics.PhaseAppend, metrics.PhaseSettle} {
		if refused[p].Rounds != 0 {
			t.Errorf("a write refused before it appended observed %d %s rounds", refused[p].Rounds, p)
		}
	}
}
