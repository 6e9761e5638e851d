package statelog

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

// admitStream is the stream of every position in the admission table.
const admitStream = engine.StreamTracker

// The node states the admission table reads against: caught up, behind,
// behind with no drain rate measured, faulted, and in a maintenance window.
var (
	admitCaught     = NodeState{Stream: admitStream, Generation: 1, Applied: 100, LogEnd: 100, DrainRate: 1000, Publishing: true}
	admitLagging    = admitWith(func(s *NodeState) { s.LogEnd = 400 })                  // 300 records behind, 0.3 s
	admitUnmeasured = admitWith(func(s *NodeState) { s.LogEnd = 400; s.DrainRate = 0 }) // 300 behind, no seconds
	admitFaulted    = admitWith(func(s *NodeState) { s.Fault = errors.New("disk on fire") })
	admitWindowed   = admitWith(func(s *NodeState) { s.Publishing = false })
)

// admitWith is the caught-up state changed by f.
func admitWith(f func(*NodeState)) NodeState { s := admitCaught; f(&s); return s }

// admitPos is a position on the table's stream.
func admitPos(seq uint64) *engine.Position {
	return &engine.Position{Stream: admitStream, Generation: 1, Seq: seq}
}

// admitWant is what one row of the admission table expects.
type admitWant struct {
	code    engine.Code      // a refusal
	level   engine.ReadLevel // served
	barrier bool             // asks for a barrier
	wait    uint64           // asks to wait for this sequence
	hint    float64          // retry_after_seconds (-1: any positive)
	key     string           // the refusal's key field
	says    string           // a phrase the sentence must hold
	through uint64           // served as of this barrier
}

// admitCases is the admission table: level × bounds × node state.
var admitCases = []struct {
	name string
	req  AdmitRequest
	st   NodeState
	want admitWant
}{
	// The grammar.
	{"unknown level", AdmitRequest{Options: engine.ReadOptions{Level: "fresh"}}, admitCaught, admitWant{code: engine.CodeInvalidArgument, key: "read_level"}},
	{"session without min_position", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session}}, admitCaught, admitWant{code: engine.CodeInvalidArgument, key: "min_position", says: "read_level=linearizable, or read_level=stale with max_lag_seq"}},
	{"linearizable&max_lag_seq=250", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable, MaxLagSeq: 250}}, admitCaught, admitWant{code: engine.CodeInvalidArgument, key: "max_lag_seq"}},
	{"session&max_lag_seconds", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(1), MaxLagSeconds: 2}}, admitCaught, admitWant{code: engine.CodeInvalidArgument, key: "max_lag_seconds"}},
	{"consistent_prefix&max_lag_seq", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix, MaxLagSeq: 1}}, admitCaught, admitWant{code: engine.CodeInvalidArgument, key: "max_lag_seq"}},
	{"zero bound at linearizable is no bound", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierSeq: 100}, admitCaught, admitWant{level: engine.Linearizable, through: 100}},
	{"another domain's log, stale", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MinPosition: &engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 3}}}, admitCaught, admitWant{code: engine.CodeWrongStream, key: "min_position"}},
	{"another domain's log, linearizable", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable, MinPosition: &engine.Position{Stream: engine.StreamPages, Generation: 1, Seq: 3}}}, admitCaught, admitWant{code: engine.CodeWrongStream}},
	{"another generation", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix, MinPosition: &engine.Position{Stream: admitStream, Generation: 2, Seq: 3}}}, admitCaught, admitWant{code: engine.CodeWrongStream, says: "generation 2"}},

	// linearizable.
	{"linearizable appends a barrier", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}}, admitCaught, admitWant{barrier: true}},
	{"linearizable waits for the record before its barrier", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierSeq: 102}, admitCaught, admitWant{wait: 101}},
	{"linearizable behind its barrier", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierSeq: 150, WaitExpired: true}, admitCaught, admitWant{code: engine.CodeBehind, hint: 0.1}},
	{"linearizable served", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierSeq: 100}, admitCaught, admitWant{level: engine.Linearizable, through: 100}},
	{"linearizable served as of its barrier, not yet delivered", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierSeq: 101}, admitCaught, admitWant{level: engine.Linearizable, through: 101}},
	{"linearizable min_position past the barrier", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable, MinPosition: admitPos(120)}, BarrierSeq: 100}, admitCaught, admitWant{wait: 120}},
	{"linearizable in a window", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}}, admitWindowed, admitWant{code: engine.CodeMaintenance, says: "stale or consistent_prefix"}},
	{"linearizable stalled", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}}, admitFaulted, admitWant{code: engine.CodeStalled, hint: 1, says: "disk on fire"}},
	{"barrier: broker silent", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierErr: ErrNoAnswer}, admitCaught, admitWant{code: engine.CodeBrokerUnreachable, hint: 1}},
	{"barrier: no quorum", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierErr: fmt.Errorf("%w: x", ErrNoQuorum)}, admitCaught, admitWant{code: engine.CodeNoQuorum, hint: 4}},
	{"barrier: log full", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}, BarrierErr: ErrLogFull}, admitCaught, admitWant{code: engine.CodeLogFull, says: "set-capacity"}},

	// session.
	{"session reached", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(90)}}, admitCaught, admitWant{level: engine.Session}},
	{"session waits", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(200)}}, admitCaught, admitWant{wait: 200}},
	{"session behind, hint from the drain", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(600)}, WaitExpired: true}, admitCaught, admitWant{code: engine.CodeBehind, hint: 0.5}},
	{"session behind, drain unmeasured", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(600)}, WaitExpired: true}, admitUnmeasured, admitWant{code: engine.CodeBehind, hint: 1}},
	{"session stalled", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(90)}}, admitFaulted, admitWant{code: engine.CodeStalled}},
	{"session in a window", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session, MinPosition: admitPos(90)}}, admitWindowed, admitWant{level: engine.Session}},

	// stale.
	{"stale served", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale}}, admitLagging, admitWant{level: engine.Stale}},
	{"stale within max_lag_seq", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeq: 300}}, admitLagging, admitWant{level: engine.Stale}},
	{"stale past max_lag_seq", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeq: 250}}, admitLagging, admitWant{code: engine.CodeTooStale}},
	{"stale past max_lag_seconds", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeconds: 0.1}}, admitLagging, admitWant{code: engine.CodeTooStale}},
	{"stale within max_lag_seconds", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeconds: 1}}, admitLagging, admitWant{level: engine.Stale}},
	{"stale seconds unmeasurable", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeconds: 1}}, admitUnmeasured, admitWant{code: engine.CodeTooStale, says: "unmeasurable"}},
	{"stale caught up, seconds bound", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeconds: 1}}, admitWith(func(s *NodeState) { s.DrainRate = 0 }), admitWant{level: engine.Stale}},
	{"stale both bounds, seq reached first", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MaxLagSeq: 10, MaxLagSeconds: 100}}, admitLagging, admitWant{code: engine.CodeTooStale, says: "max_lag_seq=10"}},
	{"stale min_position waits", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MinPosition: admitPos(150)}}, admitCaught, admitWant{wait: 150}},
	{"stale min_position behind", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale, MinPosition: admitPos(150)}, WaitExpired: true}, admitCaught, admitWant{code: engine.CodeBehind, hint: 0.1}},
	{"stale stalled", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale}}, admitFaulted, admitWant{code: engine.CodeStalled}},
	{"stale in a window", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale}}, admitWindowed, admitWant{level: engine.Stale}},

	// consistent_prefix.
	{"consistent_prefix served", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitLagging, admitWant{level: engine.ConsistentPrefix}},
	{"consistent_prefix stalled still answered", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitFaulted, admitWant{level: engine.ConsistentPrefix}},
	{"consistent_prefix stalled at the published floor still answered", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitWith(func(s *NodeState) { s.Fault = errors.New("x"); s.Floor = 100 }), admitWant{level: engine.ConsistentPrefix}},
	{"consistent_prefix stalled below the published floor", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitWith(func(s *NodeState) { s.Fault = errors.New("x"); s.Floor = 101 }), admitWant{code: engine.CodeStalled}},
	{"consistent_prefix stalled below min_position", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix, MinPosition: admitPos(150)}}, admitFaulted, admitWant{code: engine.CodeStalled}},
	{"consistent_prefix min_position behind", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix, MinPosition: admitPos(150)}, WaitExpired: true}, admitCaught, admitWant{code: engine.CodeBehind}},
	{"consistent_prefix in a window", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitWindowed, admitWant{level: engine.ConsistentPrefix}},

	// Standings later parts set: refused at every level.
	{"evicted", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale}}, admitWith(func(s *NodeState) { s.Evicted = true }), admitWant{code: engine.CodeEvicted}},
	{"below the floor", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitWith(func(s *NodeState) { s.BelowFloor = true; s.Fault = errors.New("x") }), admitWant{code: engine.CodeBelowFloor}},
	{"floor unknown", AdmitRequest{Options: engine.ReadOptions{Level: engine.Linearizable}}, admitWith(func(s *NodeState) { s.FloorUnknown = true }), admitWant{code: engine.CodeFloorUnknown, says: "coordination"}},
	{"floor unknown says why", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale}}, admitWith(func(s *NodeState) { s.FloorUnknown = true; s.FloorErr = errors.New("no quorum") }), admitWant{code: engine.CodeFloorUnknown, says: "no quorum"}},
	{"wrong log under the rows", AdmitRequest{Options: engine.ReadOptions{Level: engine.Stale}}, admitWith(func(s *NodeState) { s.WrongLog = "its checkpoint is past the log's end" }), admitWant{code: engine.CodeWrongStream}},
	{"a retained record of unknown scope", AdmitRequest{Options: engine.ReadOptions{Level: engine.ConsistentPrefix}}, admitWith(func(s *NodeState) { s.ScopeUnknown = 1 }), admitWant{code: engine.CodeDeferredScopeUnknown, says: "Upgrade"}},
	{"grammar before standing", AdmitRequest{Options: engine.ReadOptions{Level: engine.Session}}, admitWith(func(s *NodeState) { s.Evicted = true }), admitWant{code: engine.CodeInvalidArgument}},
}

// TestAdmitTable: level × bounds × node state → the step admission asks
// for, the level served or the refusal code, its hint and its sentence.
func TestAdmitTable(t *testing.T) {
	for _, c := range admitCases {
		t.Run(c.name, func(t *testing.T) {
			a := Admit(c.req, c.st)
			w := c.want
			if w.code != "" {
				checkAdmitRefusal(t, a, w)
				return
			}
			if a.Refusal != nil {
				t.Fatalf("refused %v", a.Refusal)
			}
			if a.AppendBarrier != w.barrier || a.WaitFor != w.wait {
				t.Fatalf("step %+v, want barrier=%v wait=%d", a, w.barrier, w.wait)
			}
			if w.level != "" && (!a.Done() || a.Level != w.level || a.Through != w.through) {
				t.Fatalf("served %+v, want %s through %d", a, w.level, w.through)
			}
		})
	}
}

// checkAdmitRefusal checks a refusal the table expects: its code, a
// sentence that ends as one and says what w names, its key field, and a
// hint exactly where the code is retryable (w's own where it names one).
func checkAdmitRefusal(t *testing.T, a Admission, w admitWant) {
	t.Helper()
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
}

// TestEveryReadCodeHasASentence: the thirteen codes each have a row with a
// status and a sentence saying what to do, and exactly the four the page
// names are worth coming back to this node for (behind, no_quorum,
// broker_unreachable, stalled): too_stale is not, since another node may
// be fresher (it still carries the drain's hint, "Same" as behind's).
func TestEveryReadCodeHasASentence(t *testing.T) {
	worth := map[engine.Code]bool{engine.CodeBehind: true, engine.CodeNoQuorum: true, engine.CodeBrokerUnreachable: true, engine.CodeStalled: true}
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
