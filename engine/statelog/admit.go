package statelog

import (
	"errors"
	"fmt"
	"math"

	"github.com/crewlet/crewlet/engine"
)

// NodeState is what admission looks at: this replica's standing as it is
// known without a broker call. Replica.State takes it; a table test builds
// it by hand.
type NodeState struct {
	Stream     string
	Generation uint64
	// Applied is the committed checkpoint; LogEnd the last sequence the
	// broker is known to hold (learnt from deliveries and appends).
	Applied uint64
	LogEnd  uint64
	// DrainRate is this node's measured apply rate in records a second;
	// 0 means not measured yet, so lag in seconds is unmeasurable.
	DrainRate float64
	// Fault is the error the applier is stuck on past the retry budget.
	Fault error
	// Publishing is false in a capacity window (maintenance, seal).
	Publishing bool
	// ScopeUnknown counts retained records whose scope could not be read:
	// each blocks the whole domain.
	ScopeUnknown int64
	// The standings later parts of the fleet set (eviction, the trim
	// floor, a log that is not the one the rows are keyed to). Admission
	// already answers them with their codes.
	Evicted      bool
	FloorUnknown bool
	// FloorErr is why the floor could not be read, where it could not.
	FloorErr   error
	BelowFloor bool
	// Floor is the published trim floor as last read: the trim may have
	// removed every record at or below it.
	Floor    uint64
	WrongLog string // non-empty: why this node's log is not its rows' log
}

// AdmitRequest is one read as admission sees it: the options the surface
// asked for and what has been done for it so far.
type AdmitRequest struct {
	Options engine.ReadOptions
	// BarrierSeq is where the barrier appended for this read landed (0:
	// none appended yet); BarrierErr why the append failed.
	BarrierSeq uint64
	BarrierErr error
	// AtEnd says BarrierSeq is no barrier but the log's last sequence, as
	// the one server holding a one-replica log said it (EndReader): the
	// rows must reach it itself, not the record before it.
	AtEnd bool
	// WaitExpired says the read budget was spent waiting for WaitFor.
	WaitExpired bool
}

// Admission is admission's answer: refuse, do one more thing (append a
// barrier, wait for a sequence), or serve at Level.
type Admission struct {
	Refusal       *engine.Refusal
	AppendBarrier bool
	WaitFor       uint64
	WaitWhat      string
	// Level is the level the answer is served at when nothing else is due.
	Level engine.ReadLevel
	// Through is, for a read served past its barrier, the barrier's
	// position: the rows stand there once the record before it is applied.
	Through uint64
}

// Done reports whether the read may be served now.
func (a Admission) Done() bool { return a.Refusal == nil && !a.AppendBarrier && a.WaitFor == 0 }

func refuse(r *engine.Refusal) Admission { return Admission{Refusal: r} }

// Admit decides one step of a read's admission. It is a pure function of
// the request and the node's state: the replica calls it, does what it
// asks (append, wait), and calls it again until it refuses or serves. A
// read is never served at a weaker level than asked.
func Admit(req AdmitRequest, st NodeState) Admission {
	o := req.Options
	// The grammar first: these are the caller's mistakes, whatever the
	// node's standing.
	if r := grammar(o, st); r != nil {
		return refuse(r)
	}
	// The node's standing: none of these is cured by waiting here.
	if r := standing(st); r != nil {
		return refuse(r)
	}
	// A frozen prefix is still a coherent one: only consistent_prefix,
	// which claims no age, is answered by a stalled node.
	if st.Fault != nil && (o.Level != engine.ConsistentPrefix || st.Applied < st.Floor) {
		// Below the published floor even a frozen prefix is refused: the
		// log no longer holds what would take it on from there.
		return refuse(stalled(st))
	}
	target, what := uint64(0), ""
	var through uint64 // this read's barrier, where it is the target
	if p := o.MinPosition; p != nil {
		target, what = p.Seq, "min_position "+p.Token()
	}
	if o.Level == engine.Linearizable {
		if !st.Publishing {
			return refuse(engine.Refuse(engine.CodeMaintenance, "this node runs in a capacity window (maintenance or seal) that publishes nothing, and a linearizable read proves the log's end by appending a barrier to it. Ask again once the fleet is back in normal mode, or read at stale or consistent_prefix, which append nothing."))
		}
		if req.BarrierErr != nil {
			return refuse(barrierRefusal(st.Stream, req.BarrierErr))
		}
		if req.BarrierSeq == 0 && !req.AtEnd {
			return Admission{AppendBarrier: true}
		}
		if req.BarrierSeq >= target {
			target, what, through = req.BarrierSeq, "the barrier this read appended", req.BarrierSeq
			if req.AtEnd {
				what = "the log's end when this read began"
			}
		}
	}
	// The applied position the rows must reach. A barrier changes no row,
	// so the rows through the record before it are the rows through it:
	// the read waits for that record, not for the barrier's own delivery
	// to this applier, and is answered as of the barrier (Through).
	need := target
	if through != 0 && !req.AtEnd {
		need = through - 1
	}
	if st.Applied < need {
		if st.Fault != nil {
			// Waiting cannot help a stalled applier: say so, not behind.
			return refuse(stalled(st))
		}
		if req.WaitExpired {
			return refuse(behind(st, target, what))
		}
		return Admission{WaitFor: need, WaitWhat: what}
	}
	if o.Level == engine.Stale {
		if r := staleBound(o, st); r != nil {
			return refuse(r)
		}
	}
	return Admission{Level: o.Level, Through: through}
}

// grammar refuses a read whose options say nothing coherent: the
// caller's mistakes, whatever the node's standing.
func grammar(o engine.ReadOptions, st NodeState) *engine.Refusal {
	if _, ok := engine.ParseReadLevel(string(o.Level)); !ok {
		return engine.Refuse(engine.CodeInvalidArgument, "read_level %q is not one of linearizable, session, stale, consistent_prefix.", o.Level).With("key", "read_level")
	}
	if p := o.MinPosition; p != nil {
		if p.Stream != st.Stream {
			return engine.Refuse(engine.CodeWrongStream, "min_position %s is on %s, but this read is on %s; pass a position this domain's writes answered with.", p.Token(), p.Stream, st.Stream).With("key", "min_position")
		}
		if p.Generation != st.Generation {
			return engine.Refuse(engine.CodeWrongStream, "min_position %s is in generation %d, but this node's %s rows are in generation %d; a position from before a reanchor compares with nothing here.", p.Token(), p.Generation, st.Stream, st.Generation).With("key", "min_position")
		}
	}
	if o.Level != engine.Stale && (o.MaxLagSeq != 0 || o.MaxLagSeconds != 0) {
		key := "max_lag_seq"
		if o.MaxLagSeq == 0 {
			key = "max_lag_seconds"
		}
		return engine.Refuse(engine.CodeInvalidArgument, "%s bounds a stale read and nothing else, and this read asked for %s; drop %s, or ask for read_level=stale with it.", key, o.Level, key).With("key", key)
	}
	if o.Level == engine.Session && o.MinPosition == nil {
		return engine.Refuse(engine.CodeInvalidArgument, "read_level=session needs min_position, the position your write answered with; without one, ask for read_level=linearizable, or read_level=stale with max_lag_seq.").With("key", "min_position")
	}
	return nil
}

// staleBound refuses a stale read past the lag bound it set.
func staleBound(o engine.ReadOptions, st NodeState) *engine.Refusal {
	lag := LagOf(st.Applied, st.LogEnd, st.DrainRate)
	if o.MaxLagSeq != 0 && lag.Seq > o.MaxLagSeq {
		return tooStale(lag, st.DrainRate, fmt.Sprintf("%d records behind the log's end, past max_lag_seq=%d", lag.Seq, o.MaxLagSeq))
	}
	if o.MaxLagSeconds != 0 {
		if lag.Seconds == nil {
			return tooStale(lag, st.DrainRate, fmt.Sprintf("%d records behind, and its lag in seconds is unmeasurable (no drain measured yet) while max_lag_seconds=%g is set; bound it with max_lag_seq instead", lag.Seq, o.MaxLagSeconds))
		}
		if *lag.Seconds > o.MaxLagSeconds {
			return tooStale(lag, st.DrainRate, fmt.Sprintf("%.3f s behind the log's end, past max_lag_seconds=%g", *lag.Seconds, o.MaxLagSeconds))
		}
	}
	return nil
}

// standing refuses for what this node is rather than for what a read
// asks: an eviction, a log that is not the rows' log, an unreadable or
// passed trim floor, a record whose scope nobody can read. None of these
// is cured by waiting on this node.
func standing(st NodeState) *engine.Refusal {
	switch {
	case st.Evicted:
		return engine.RefuseDoc(engine.CodeEvicted)
	case st.WrongLog != "":
		return wrongStream(st.Stream, st.WrongLog)
	case st.FloorUnknown:
		why := ""
		if st.FloorErr != nil {
			why = " (" + st.FloorErr.Error() + ")"
		}
		return engine.Refuse(engine.CodeFloorUnknown, "the published trim floor of %s could not be read%s, and an unreadable floor blocks: serving could cover a hole this node cannot see. Check coordination.", st.Stream, why)
	case st.BelowFloor:
		return engine.Refuse(engine.CodeBelowFloor, "records of %s this node never applied are gone from the log, so its rows miss state no replay can supply. It adopts a peer's snapshot on its own; ask another node meanwhile.", st.Stream)
	case st.ScopeUnknown > 0:
		return scopeUnknownRefusal(st.ScopeUnknown, st.Stream)
	}
	return nil
}

// scopeUnknownRefusal is deferred_scope_unknown: a retained record whose
// scope nobody can read blocks the whole domain, its reads and its writes.
func scopeUnknownRefusal(n int64, stream string) *engine.Refusal {
	return engine.Refuse(engine.CodeDeferredScopeUnknown, "this node holds %d record(s) of %s it cannot decode whose scope it cannot read either, so nothing it says or decides about this domain can be vouched for; nothing was written. Upgrade this node to the record version the fleet writes.", n, stream).With("domain", stream)
}

// OutOfService says why this copy cannot serve the estate, nil while it
// can: its standing refuses (evicted, wrong log, trim floor, unreadable
// scope), or its applier is stalled past the retry budget or stopped for
// good, so its rows are frozen. Lag is not among them: a node that is
// behind still serves, and its reads wait or refuse behind on their own.
func (r *Replica) OutOfService() *engine.Refusal {
	st := r.state()
	if ref := standing(st); ref != nil {
		return ref
	}
	if st.Fault != nil {
		return stalled(st)
	}
	return nil
}

func stalled(st NodeState) *engine.Refusal {
	p := engine.Position{Stream: st.Stream, Generation: st.Generation, Seq: st.Applied}
	r := engine.Refuse(engine.CodeStalled, "this node's %s applier is stuck at %s retrying: %v. Its rows are frozen, so a short answer would be wrong rather than old; check the applier with `crewlet retention status` (a retried failure clears on its own when an attempt succeeds), or read at consistent_prefix, which claims no age.",
		st.Stream, p.Token(), st.Fault)
	// Worth coming back for (a retried failure clears on its own), but
	// the page gives no figure: a second, the applier's longest backoff.
	r.RetryAfter = 1
	r.Position = &p
	return r.With("error", st.Fault.Error()).With("stream", st.Stream)
}

func behind(st NodeState, seq uint64, what string) *engine.Refusal {
	p := engine.Position{Stream: st.Stream, Generation: st.Generation, Seq: seq}
	r := engine.Refuse(engine.CodeBehind, "this node has applied %s through %d and has not reached %d (%s) within the read budget; retry after the hint, it clears on its own.",
		st.Stream, st.Applied, seq, what)
	r.RetryAfter = RetryHint(seq-min(seq, st.Applied), st.DrainRate)
	r.Position = &p
	return r
}

// tooStale is not worth coming back to this node for (the page names
// four codes that are): another node may be fresher, or the caller may
// accept more staleness. Its lag says how far behind this node is.
func tooStale(lag *engine.Lag, rate float64, why string) *engine.Refusal {
	r := engine.Refuse(engine.CodeTooStale, "this node is %s; ask another node, or accept more staleness.", why)
	if s := RetryHint(lag.Seq, rate); s > 0 {
		r = r.With("drain_seconds", s)
	}
	return r.With("lag", lag)
}

// barrierRefusal names what stopped a barrier append.
func barrierRefusal(stream string, err error) *engine.Refusal {
	switch {
	case errors.Is(err, errNotPublishing):
		return engine.RefuseDoc(engine.CodeMaintenance)
	case errors.Is(err, ErrLogFull):
		return engine.Refuse(engine.CodeLogFull, "%s is at the byte ceiling its ordinary appends are held to, so no barrier can be written. Raise it with `crewlet retention set-capacity`, or unblock the trim (`crewlet retention status` names the term); stale reads keep answering.", stream)
	case errors.Is(err, ErrVolumeFull):
		return engine.Refuse(engine.CodeVolumeFull, "the volume holding the broker's store is full (%v), so no barrier can be written to %s; this is the disk, not the log's ceiling. Free space on the volume of stream.store_dir; stale reads keep answering.", err, stream)
	case errors.Is(err, ErrNoQuorum):
		return engine.Refuse(engine.CodeNoQuorum, "the barrier on %s did not commit: the broker answered and a majority did not agree. Retry after the hint; if it persists, a member is down or partitioned.", stream)
	}
	return engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not answer the barrier on %s (%v). Retry; if it persists, look at the broker itself, not the quorum.", stream, err)
}

// RetryHint turns a distance in records into seconds through the measured
// drain, rounded up to a tenth and at least a tenth; 1 s while no drain
// has been measured.
func RetryHint(records uint64, rate float64) float64 {
	if rate <= 0 {
		return 1
	}
	return math.Max(0.1, math.Ceil(float64(records)/rate*10)/10)
}

// LagOf is the distance from applied to the log's end, in records and,
// where the drain is measured, in seconds. Caught up is zero seconds.
func LagOf(applied, logEnd uint64, rate float64) *engine.Lag {
	l := &engine.Lag{}
	if logEnd > applied {
		l.Seq = logEnd - applied
	}
	if l.Seq == 0 {
		z := 0.0
		l.Seconds = &z
		return l
	}
	if rate > 0 {
		s := float64(l.Seq) / rate
		l.Seconds = &s
	}
	return l
}

// LagUnmeasured is the note a read carries when its lag in seconds could
// not be derived.
const LagUnmeasured = "lag in seconds is unmeasurable: this node has not measured its drain rate yet; lag.seq is the measured distance"

// Floor raises a read's min_position to floor when floor is on the
// replica's stream (this node's own last write, a seat's trigger
// position): the answer is then from no earlier than either. A floor on
// another domain's log is left off rather than refused, since a floor on
// one log never holds up a read of another; a caller's own min_position on
// another log still refuses wrong_stream.
func Floor(opts engine.ReadOptions, stream string, floor engine.Position) engine.ReadOptions {
	if floor.Stream != stream || floor.IsZero() {
		return opts
	}
	if opts.MinPosition == nil || (opts.MinPosition.Stream == floor.Stream && opts.MinPosition.Generation == floor.Generation && opts.MinPosition.Seq < floor.Seq) {
		f := floor
		opts.MinPosition = &f
	}
	return opts
}
