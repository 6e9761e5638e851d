package statelog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

// TestAdmitTable: level × bounds × node state → the step admission asks
// for, the level served or the refusal code, its hint and its sentence.
func TestAdmitTable(t *testing.T) {
	const stream = engine.StreamTracker
	pos := func(seq uint64) *engine.Position { return &engine.Position{Stream: stream, Generation: 1, Seq: seq} }
	caught := NodeState{Stream: stream, Generation: 1, Applied: 100, LogEnd: 100, DrainRate: 1000, Publishing: true}
	with := func(f func(*NodeState)) NodeState { s := caught; f(&s); return s }
	lagging := with(func(s *NodeState) { s.LogEnd = 400 })                     // 300 records behind, 0.3 s
	unmeasured := with(func(s *NodeState) { s.LogEnd = 400; s.DrainRate = 0 }) // 300 behind, no seconds
	faulted := with(func(s *NodeState) { s.Fault = errors.New("disk on fire") })
	windowed := with(func(s *NodeState) { s.Publishing = false })
	lin, ses, stl, cp := engine.Linearizable, engine.Session, engine.Stale, engine.ConsistentPrefix

	type want struct {
		code    engine.Code      // a refusal
		level   engine.ReadLevel // served
		barrier bool             // asks for a barrier
		wait    uint64           // asks to wait for this sequence
		hint    float64          // retry_after_seconds (-1: any positive)
		key     string           // the refusal's key field
		says    string           // a phrase the sentence must hold
	}
	cases := []struct {
		name string
		req  AdmitRequest
		st   NodeState
		want want
	}{
		// The grammar.
		{"unknown level", AdmitRequest{Options: engine.ReadOptions{Level: "fresh"}}, caught, want{code: engine.CodeInvalidArgument, key: "read_level"}},
		{"session without min_position", AdmitRequest{Options: engine.ReadOptions{Level: ses}}, caught, want{code: engine.CodeInvalidArgument, key: "min_position", says: "read_level=linearizable, or read_level=stale with max_lag_seq"}},
		{"linearizable&max_lag_seq=250", AdmitRequest{Options: engine.ReadOptions{Level: lin, MaxLagSeq: 250}}, caught, want{code: engine.CodeInvalidArgument, key: "max_lag_seq"}},
		{"session&max_lag_seconds", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(1), MaxLagSeconds: 2}}, caught, want{code: engine.CodeInvalidArgument, key: "max_lag_seconds"}},
		{"consistent_prefix&max_lag_seq", AdmitRequest{Options: engine.ReadOptions{Level: cp, MaxLagSeq: 1}}, caught, want{code: engine.CodeInvalidArgument, key: "max_lag_seq"}},
		{"zero bound at linearizable is no bound", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierSeq: 100}, caught, want{level: lin}},
		{"another domain's log, stale", AdmitRequest{Options: engine.ReadOptions{Level: stl, MinPosition: &engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 3}}}, caught, want{code: engine.CodeWrongStream, key: "min_position"}},
		{"another domain's log, linearizable", AdmitRequest{Options: engine.ReadOptions{Level: lin, MinPosition: &engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 3}}}, caught, want{code: engine.CodeWrongStream}},
		{"another generation", AdmitRequest{Options: engine.ReadOptions{Level: cp, MinPosition: &engine.Position{Stream: stream, Generation: 2, Seq: 3}}}, caught, want{code: engine.CodeWrongStream, says: "generation 2"}},

		// linearizable.
		{"linearizable appends a barrier", AdmitRequest{Options: engine.ReadOptions{Level: lin}}, caught, want{barrier: true}},
		{"linearizable waits for its barrier", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierSeq: 101}, caught, want{wait: 101}},
		{"linearizable behind its barrier", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierSeq: 150, WaitExpired: true}, caught, want{code: engine.CodeBehind, hint: 0.1}},
		{"linearizable served", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierSeq: 100}, caught, want{level: lin}},
		{"linearizable min_position past the barrier", AdmitRequest{Options: engine.ReadOptions{Level: lin, MinPosition: pos(120)}, BarrierSeq: 100}, caught, want{wait: 120}},
		{"linearizable in a window", AdmitRequest{Options: engine.ReadOptions{Level: lin}}, windowed, want{code: engine.CodeMaintenance, says: "stale or consistent_prefix"}},
		{"linearizable stalled", AdmitRequest{Options: engine.ReadOptions{Level: lin}}, faulted, want{code: engine.CodeStalled, hint: 1, says: "disk on fire"}},
		{"barrier: broker silent", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierErr: ErrNoAnswer}, caught, want{code: engine.CodeBrokerUnreachable, hint: 1}},
		{"barrier: no quorum", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierErr: fmt.Errorf("%w: x", ErrNoQuorum)}, caught, want{code: engine.CodeNoQuorum, hint: 4}},
		{"barrier: log full", AdmitRequest{Options: engine.ReadOptions{Level: lin}, BarrierErr: ErrLogFull}, caught, want{code: engine.CodeLogFull, says: "set-capacity"}},

		// session.
		{"session reached", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(90)}}, caught, want{level: ses}},
		{"session waits", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(200)}}, caught, want{wait: 200}},
		{"session behind, hint from the drain", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(600)}, WaitExpired: true}, caught, want{code: engine.CodeBehind, hint: 0.5}},
		{"session behind, drain unmeasured", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(600)}, WaitExpired: true}, unmeasured, want{code: engine.CodeBehind, hint: 1}},
		{"session stalled", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(90)}}, faulted, want{code: engine.CodeStalled}},
		{"session in a window", AdmitRequest{Options: engine.ReadOptions{Level: ses, MinPosition: pos(90)}}, windowed, want{level: ses}},

		// stale.
		{"stale served", AdmitRequest{Options: engine.ReadOptions{Level: stl}}, lagging, want{level: stl}},
		{"stale within max_lag_seq", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeq: 300}}, lagging, want{level: stl}},
		{"stale past max_lag_seq", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeq: 250}}, lagging, want{code: engine.CodeTooStale, hint: 0.3}},
		{"stale past max_lag_seconds", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeconds: 0.1}}, lagging, want{code: engine.CodeTooStale, hint: 0.3}},
		{"stale within max_lag_seconds", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeconds: 1}}, lagging, want{level: stl}},
		{"stale seconds unmeasurable", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeconds: 1}}, unmeasured, want{code: engine.CodeTooStale, says: "unmeasurable"}},
		{"stale caught up, seconds bound", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeconds: 1}}, with(func(s *NodeState) { s.DrainRate = 0 }), want{level: stl}},
		{"stale both bounds, seq reached first", AdmitRequest{Options: engine.ReadOptions{Level: stl, MaxLagSeq: 10, MaxLagSeconds: 100}}, lagging, want{code: engine.CodeTooStale, says: "max_lag_seq=10"}},
		{"stale min_position waits", AdmitRequest{Options: engine.ReadOptions{Level: stl, MinPosition: pos(150)}}, caught, want{wait: 150}},
		{"stale min_position behind", AdmitRequest{Options: engine.ReadOptions{Level: stl, MinPosition: pos(150)}, WaitExpired: true}, caught, want{code: engine.CodeBehind, hint: 0.1}},
		{"stale stalled", AdmitRequest{Options: engine.ReadOptions{Level: stl}}, faulted, want{code: engine.CodeStalled}},
		{"stale in a window", AdmitRequest{Options: engine.ReadOptions{Level: stl}}, windowed, want{level: stl}},

		// consistent_prefix.
		{"consistent_prefix served", AdmitRequest{Options: engine.ReadOptions{Level: cp}}, lagging, want{level: cp}},
		{"consistent_prefix stalled still answered", AdmitRequest{Options: engine.ReadOptions{Level: cp}}, faulted, want{level: cp}},
		{"consistent_prefix stalled below min_position", AdmitRequest{Options: engine.ReadOptions{Level: cp, MinPosition: pos(150)}}, faulted, want{code: engine.CodeStalled}},
		{"consistent_prefix min_position behind", AdmitRequest{Options: engine.ReadOptions{Level: cp, MinPosition: pos(150)}, WaitExpired: true}, caught, want{code: engine.CodeBehind}},
		{"consistent_prefix in a window", AdmitRequest{Options: engine.ReadOptions{Level: cp}}, windowed, want{level: cp}},

		// Standings later parts set: refused at every level.
		{"evicted", AdmitRequest{Options: engine.ReadOptions{Level: stl}}, with(func(s *NodeState) { s.Evicted = true }), want{code: engine.CodeEvicted}},
		{"below the floor", AdmitRequest{Options: engine.ReadOptions{Level: cp}}, with(func(s *NodeState) { s.BelowFloor = true; s.Fault = errors.New("x") }), want{code: engine.CodeBelowFloor}},
		{"floor unknown", AdmitRequest{Options: engine.ReadOptions{Level: lin}}, with(func(s *NodeState) { s.FloorUnknown = true }), want{code: engine.CodeFloorUnknown, says: "coordination"}},
		{"wrong log under the rows", AdmitRequest{Options: engine.ReadOptions{Level: stl}}, with(func(s *NodeState) { s.WrongLog = "its checkpoint is past the log's end" }), want{code: engine.CodeWrongStream}},
		{"a retained record of unknown scope", AdmitRequest{Options: engine.ReadOptions{Level: cp}}, with(func(s *NodeState) { s.ScopeUnknown = 1 }), want{code: engine.CodeDeferredScopeUnknown, says: "Upgrade"}},
		{"grammar before standing", AdmitRequest{Options: engine.ReadOptions{Level: ses}}, with(func(s *NodeState) { s.Evicted = true }), want{code: engine.CodeInvalidArgument}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := Admit(c.req, c.st)
			w := c.want
			if w.code != "" {
				if a.Refusal == nil {
					t.Fatalf("admitted %+v, want refusal %s", a, w.code)
				}
				r := a.Refusal
				if r.Code != w.code {
					t.Fatalf("refused %s (%s), want %s", r.Code, r.Message, w.code)
				}
				if r.Message == "" || !strings.HasSuffix(strings.TrimSpace(r.Message), ".") {
					t.Fatalf("sentence %q", r.Message)
				}
				if w.says != "" && !strings.Contains(r.Message, w.says) {
					t.Fatalf("sentence %q does not say %q", r.Message, w.says)
				}
				if w.key != "" && r.Fields["key"] != w.key {
					t.Fatalf("key %v, want %s", r.Fields["key"], w.key)
				}
				retry := engine.Codes[w.code].Retryable
				if retry != (r.RetryAfter > 0) {
					t.Fatalf("hint %v for %s (retryable %v)", r.RetryAfter, w.code, retry)
				}
				if w.hint > 0 && r.RetryAfter != w.hint {
					t.Fatalf("hint %v, want %v", r.RetryAfter, w.hint)
				}
				return
			}
			if a.Refusal != nil {
				t.Fatalf("refused %v", a.Refusal)
			}
			if a.AppendBarrier != w.barrier || a.WaitFor != w.wait {
				t.Fatalf("step %+v, want barrier=%v wait=%d", a, w.barrier, w.wait)
			}
			if w.level != "" && (!a.Done() || a.Level != w.level) {
				t.Fatalf("served %+v, want %s", a, w.level)
			}
		})
	}
}

// TestEveryReadCodeHasASentence: the thirteen codes each have a row with a
// status, a sentence saying what to do, and a hint exactly where the page
// says the code is worth coming back for.
func TestEveryReadCodeHasASentence(t *testing.T) {
	worth := map[engine.Code]bool{engine.CodeBehind: true, engine.CodeNoQuorum: true, engine.CodeBrokerUnreachable: true, engine.CodeStalled: true, engine.CodeTooStale: true}
	for _, c := range []engine.Code{engine.CodeBehind, engine.CodeTooStale, engine.CodeStalled, engine.CodeNoQuorum, engine.CodeBrokerUnreachable,
		engine.CodeLogFull, engine.CodeDeferred, engine.CodeDeferredScopeUnknown, engine.CodeBelowFloor, engine.CodeFloorUnknown,
		engine.CodeEvicted, engine.CodeMaintenance, engine.CodeWrongStream} {
		info, ok := engine.Codes[c]
		if !ok || info.Doc == "" || info.HTTPStatus < 400 {
			t.Fatalf("%s: %+v", c, info)
		}
		if info.Retryable != worth[c] {
			t.Fatalf("%s retryable=%v", c, info.Retryable)
		}
	}
	if engine.Codes[engine.CodeNoQuorum].RetryAfter != 4 {
		t.Fatal("no_quorum's hint is the broker's minimum election timeout, 4 s")
	}
}

func TestOrdinaryCeiling(t *testing.T) {
	if got := OrdinaryCeiling(true, 16<<10); got != 15<<10 {
		t.Fatalf("tracker: %d", got)
	}
	if got := OrdinaryCeiling(true, 1<<30); got != 1<<30-1<<26 {
		t.Fatalf("pages: %d", got)
	}
	if got := OrdinaryCeiling(false, 1<<20); got != 1<<20 {
		t.Fatalf("usage keeps all of it: %d", got)
	}
	if got := OrdinaryCeiling(true, 0); got != 0 {
		t.Fatalf("no ceiling: %d", got)
	}
}

func TestFloor(t *testing.T) {
	tr := func(seq uint64) engine.Position {
		return engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: seq}
	}
	o := Floor(engine.ReadOptions{Level: engine.Linearizable}, engine.StreamTracker, tr(7))
	if o.MinPosition == nil || *o.MinPosition != tr(7) {
		t.Fatalf("floor not set: %+v", o)
	}
	if o2 := Floor(o, engine.StreamTracker, tr(3)); *o2.MinPosition != tr(7) {
		t.Fatalf("a lower floor lowered it: %+v", o2.MinPosition)
	}
	if o3 := Floor(o, engine.StreamTracker, tr(9)); *o3.MinPosition != tr(9) {
		t.Fatalf("a higher floor did not raise it: %+v", o3.MinPosition)
	}
	pages := engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 50}
	if o4 := Floor(engine.ReadOptions{Level: engine.Stale}, engine.StreamTracker, pages); o4.MinPosition != nil {
		t.Fatalf("a pages floor held up a tracker read: %+v", o4.MinPosition)
	}
	if *o.MinPosition != tr(7) {
		t.Fatal("Floor changed its argument")
	}
}
