package node_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// metric is the value of the series of name whose labels include want,
// as the node's registry gathers it (-1 when there is none).
func metric(t *testing.T, n *node.Node, name string, want map[string]string) float64 {
	t.Helper()
	fams, err := n.Metrics().Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
	next:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue next
				}
			}
			return value(m)
		}
	}
	return -1
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	}
	return -1
}

func alarm(n *node.Node, name string) *statelog.Alarm {
	for _, a := range n.Alarms(context.Background()) {
		if a.Name == name {
			return &a
		}
	}
	return nil
}

// publishRaw appends rec straight onto the tracker's log, as a node that
// is not this one (or a newer build) would.
func publishRaw(t *testing.T, n *node.Node, rec *record.Record) uint64 {
	t.Helper()
	ctx := context.Background()
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := n.Log(engine.DomainTracker).Publish(ctx, rec.Subject, data, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, ack.Seq); err != nil {
		t.Fatal(err)
	}
	return ack.Seq
}

// TestAlarmRecordsGated: a record written by a node the fleet evicted is
// dropped by the eviction gate; the records_gated alarm is up on the
// node's status naming its position, crewlet_statelog_records_gated
// counts it under the gate, and crewlet_alarm says so.
func TestAlarmRecordsGated(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	mustProject(t, n.Tracker(), "ENG")
	if a := alarm(n, statelog.AlarmRecordsGated); a != nil {
		t.Fatalf("records_gated up before any drop: %+v", a)
	}
	if _, err := n.NodeGates().EvictNode(ctx, engine.WriteOptions{}, "ghost"); err != nil {
		t.Fatal(err)
	}
	seq := publishRaw(t, n, &record.Record{Kind: trackrec.KindUpdateWorkItem, Version: 1, Writer: "ghost", Generation: 1,
		Subject: "crewlet.tracker.item.x", Scope: []string{"item:x"}, Payload: json.RawMessage(`{"id":"x","title":"late"}`)})
	a := alarm(n, statelog.AlarmRecordsGated)
	if a == nil || a.Position == nil || a.Position.Seq != seq || a.OutOfService || !strings.Contains(a.Message, "evicted") {
		t.Fatalf("records_gated alarm: %+v", a)
	}
	if v := metric(t, n, "crewlet_statelog_records_gated", map[string]string{"domain": "tracker", "gate": "evicted"}); v != 1 {
		t.Fatalf("records_gated{gate=evicted} = %v, want 1", v)
	}
	if v := metric(t, n, "crewlet_alarm", map[string]string{"name": "records_gated", "domain": "tracker"}); v != 1 {
		t.Fatalf("crewlet_alarm{records_gated} = %v, want 1", v)
	}
	if n.Unready() != nil {
		t.Fatalf("a gated record takes the node out of service: %v", n.Unready())
	}
	st, err := n.Retention().Answer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Alarms) != 1 || st.Alarms[0].Name != statelog.AlarmRecordsGated || st.Alarms[0].Domain != engine.DomainTracker {
		t.Fatalf("the status answer's alarms: %+v", st.Alarms)
	}
}

// TestAlarmDeferral: a record of a format version this build cannot
// decode is retained; past the deferral grace (shortened by config) the
// alarm names its position and scope, and not before (the default 30
// minutes on another node holding the same record).
func TestAlarmDeferral(t *testing.T) {
	rec := &record.Record{Kind: "tracker.future", Version: record.FormatVersion + 1, Writer: "n9", Generation: 1,
		Subject: "crewlet.tracker.item.fut", Scope: []string{"item:fut"}}
	patient := enginetest.OpenNode(t, node.Config{})
	publishRaw(t, patient, rec)
	if patient.Replica(engine.DomainTracker).Stats().Retained != 1 {
		t.Fatal("the future record was not retained")
	}
	if a := alarm(patient, statelog.AlarmDeferral); a != nil {
		t.Fatalf("deferral alarm inside the 30-minute grace: %+v", a)
	}
	hasty := enginetest.OpenNode(t, node.Config{Name: "n2", DeferralGrace: time.Nanosecond})
	seq := publishRaw(t, hasty, rec)
	a := alarm(hasty, statelog.AlarmDeferral)
	if a == nil || a.Position == nil || a.Position.Seq != seq || len(a.Scope) != 1 || a.Scope[0] != "item:fut" || a.Since.IsZero() {
		t.Fatalf("deferral alarm: %+v", a)
	}
	if !strings.Contains(a.Message, a.Position.Token()) || !strings.Contains(a.Message, "item:fut") {
		t.Fatalf("the alarm does not name the position and the scope: %s", a.Message)
	}
	if v := metric(t, hasty, "crewlet_alarm", map[string]string{"name": "deferral", "domain": "tracker"}); v != 1 {
		t.Fatalf("crewlet_alarm{deferral} = %v, want 1", v)
	}
}

// TestAlarmLogFull: a ceiling small enough to fill raises
// log_full_approaching before writes refuse log_full, and the refusals
// are counted by reason.
func TestAlarmLogFull(t *testing.T) {
	const ceiling = 16 << 10
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{Stream: node.StreamConfig{LogMaxBytes: map[string]int64{tracker.Spec.CeilingKey: ceiling}}})
	mustProject(t, n.Tracker(), "ENG")
	if a := alarm(n, statelog.AlarmLogFull); a != nil {
		t.Fatalf("log_full_approaching on an empty log: %+v", a)
	}
	var refused error
	for i := 0; i < 200 && refused == nil; i++ {
		_, refused = n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("filler %d %s", i, strings.Repeat("x", 200))})
		if ref, ok := engine.AsRefusal(refused); ok && ref.Code == engine.CodeBehind && ref.Position != nil {
			// A loaded machine: this node's own last write is not applied
			// within the read budget yet. It clears on its own; wait for it.
			if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, ref.Position.Seq); err != nil {
				t.Fatal(err)
			}
			refused = nil
		}
	}
	if engine.CodeOf(refused) != engine.CodeLogFull {
		t.Fatalf("filling the log ended with %v", refused)
	}
	if a := alarm(n, statelog.AlarmLogFull); a == nil || !strings.Contains(a.Message, "set-capacity") {
		t.Fatalf("log_full_approaching on a full log: %+v", a)
	}
	if v := metric(t, n, "crewlet_statelog_publish_refusals", map[string]string{"domain": "tracker", "reason": "log_full"}); v < 1 {
		t.Fatalf("publish_refusals{reason=log_full} = %v", v)
	}
	if v := metric(t, n, "crewlet_alarm", map[string]string{"name": "log_full_approaching", "domain": "tracker"}); v != 1 {
		t.Fatalf("crewlet_alarm{log_full_approaching} = %v, want 1", v)
	}
}

// TestAlarmApplierFaulted: an apply that fails (the failpoint before the
// commit: a lock held by another connection is waited for in line, never
// failed) past the retry budget raises applier_faulted, which takes the
// node out of service (/readyz names it); tx aborts and retries are
// counted, and the alarm clears when an attempt succeeds.
func TestAlarmApplierFaulted(t *testing.T) {
	ctx := context.Background()
	var failing atomic.Bool
	hooks := node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		if failing.Load() {
			return errors.New("injected: disk on fire")
		}
		return nil
	}}
	n := enginetest.OpenNode(t, node.Config{Hooks: hooks, ApplyRetryBudget: 300 * time.Millisecond, WriteWait: 100 * time.Millisecond})
	mustProject(t, n.Tracker(), "ENG")
	failing.Store(true)
	if _, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "stuck"}); err != nil {
		t.Fatal(err)
	}
	// The seeds' retry budget bounds how long a fault takes to show.
	enginetest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if alarm(n, statelog.AlarmApplierFaulted) == nil {
			return fmt.Errorf("no applier_faulted alarm")
		}
		return nil
	})
	a := alarm(n, statelog.AlarmApplierFaulted)
	if !a.OutOfService || a.Position == nil || !strings.Contains(a.Message, "disk on fire") {
		t.Fatalf("applier_faulted: %+v", a)
	}
	if ref := n.Unready(); ref == nil || ref.Code != engine.CodeStalled || ref.Fields["alarm"] != statelog.AlarmApplierFaulted {
		t.Fatalf("unready while faulted: %v", ref)
	}
	if v := metric(t, n, "crewlet_alarm", map[string]string{"name": "applier_faulted", "domain": "tracker"}); v != 1 {
		t.Fatalf("crewlet_alarm{applier_faulted} = %v, want 1", v)
	}
	if v := metric(t, n, "crewlet_statelog_apply_tx_aborts", map[string]string{"domain": "tracker"}); v < 1 {
		t.Fatalf("tx aborts = %v while the applier retries", v)
	}
	if v := metric(t, n, "crewlet_statelog_apply_retries", map[string]string{"domain": "tracker"}); v < 1 {
		t.Fatalf("retries = %v while the applier retries", v)
	}
	failing.Store(false)
	enginetest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		if a := alarm(n, statelog.AlarmApplierFaulted); a != nil {
			return fmt.Errorf("still up: %s", a.Message)
		}
		return nil
	})
	if n.Unready() != nil {
		t.Fatalf("unready after recovery: %v", n.Unready())
	}
}
