package statelog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/metrics"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/ledger"
)

// Proposal is what a domain decided a write appends.
type Proposal struct {
	Kind    string
	Subject string
	Scope   []string
	Payload any
	// Version is the record's format version: the lowest that can apply
	// it whole (0 is 1). A record carrying a field a later build added is
	// stamped with that build's version.
	Version int
}

// Decide reads the local rows inside one snapshot and returns the record
// to append, or a refusal. It may run several times: once per round lost
// to another writer on the same subject.
type Decide func(ctx context.Context, tx *sql.Tx) (*Proposal, error)

// Written is a write's answer from the framework: the outcome and, where
// the record landed, its sequence. Replayed says the answer is an earlier
// copy's (from the ledger, the duplicate window or the log), so nothing
// this attempt decided may be used: read the object's rows instead.
// Unvouched says the outcome is unknown because this node's ledger may
// have lost the operation's row (a create can still answer from its row).
type Written struct {
	engine.WriteResult
	Seq       uint64
	Replayed  bool
	Unvouched bool
	// Answer is what the applier read for this write right after its
	// record (Answerer), nil where it read nothing.
	Answer any
}

// Op is the operation a write runs under: its id, the digest of the
// call's arguments (an id brought back must come with it again), and
// whether the id is known to name this call.
type Op = ledger.Call

// Write runs the write path for one operation, in the order of
// DESIGN.md's numbered steps, and counts its answer: the outcome, or the
// refusal by reason (the gate's name where what it appended applies
// nowhere, as crewlet.statelog.publish.refusals counts it).
func (r *Replica) Write(ctx context.Context, op Op, decide Decide) (Written, error) {
	out, err := r.write(ctx, op, decide)
	if out.Seq > 0 {
		// Answered: the next write this node decides must see it.
		r.noteOwn(out.Seq)
	}
	if ref, ok := engine.AsRefusal(err); ok {
		reason := string(ref.Code)
		if g, ok := ref.Fields["gate"].(string); ok && g != "" {
			reason = g
		}
		r.cfg.Metrics.PublishRefused(reason)
	} else if err == nil {
		r.cfg.Metrics.Outcome(string(out.Outcome))
	}
	return out, err
}

func (r *Replica) write(ctx context.Context, op Op, decide Decide) (Written, error) {
	opID := op.ID.String()
	out := Written{WriteResult: engine.WriteResult{OpID: opID}}
	if ref := r.admitWrite(opID); ref != nil {
		return out, ref
	}
	// A retry the ledger records is answered, not decided again. An id
	// minted for this very call is no retry: no ledger holds it yet.
	if !op.Fresh {
		if answered, res, err := r.fromLedger(ctx, op, out); answered {
			return res, err
		}
	}
	if !op.Vouched {
		// An id brought back with other arguments than it was issued for,
		// and no copy of it landed: refused before anything is written,
		// rather than half-answered from the first call.
		return out, engine.Refuse(engine.CodeOpReused, "op_id %s was issued for another call (other arguments) that never landed here; a different write takes a fresh id: call again without op_id.", opID)
	}
	if op.Late {
		return r.lateKey(ctx, op, out)
	}
	if op.Fresh {
		// Minted now: after any watermark, so vouched for without asking.
	} else if wm, lost, err := ledger.Watermark(ctx, r.stmts); err != nil {
		return out, err
	} else if !ledger.Vouches(op.ID, wm, lost) {
		return r.unvouched(ctx, op, out, decide)
	}
	// Read-your-writes on the write path: this node's own last write on
	// this log is applied before the next one decides. "Last" is the
	// newest this node has answered (noteOwn): a write answered before
	// this one began is one its caller may build on, while the writes
	// still under way beside it are concurrent with it, ordered only by
	// the broker's arbitration on their subjects. Waiting for those too
	// would make every write wait for the apply of all the others'
	// appends, a convoy that halved the write rate at 64 writers.
	if own := r.ownLast.Load(); own > 0 {
		if err := r.waitFor(ctx, own, "this node's own last write on "+r.stream); err != nil {
			return out, err
		}
	}
	if r.answerer != nil {
		r.answers.await(opID)
		defer r.answers.done(opID)
	}
	return r.rounds(ctx, op, out, decide)
}

// admitWrite refuses a write this node cannot take at all: a capacity
// window, a faulted applier, an eviction.
func (r *Replica) admitWrite(opID string) *engine.Refusal {
	if !r.cfg.Publishing {
		return engine.Refuse(engine.CodeMaintenance, "this node runs in a capacity window that publishes nothing, so it takes no writes. Write again once the fleet is back in normal mode.")
	}
	if st := r.state(); st.FloorUnknown || st.BelowFloor {
		// Decided against rows that may miss state: refused like a read.
		return standing(st)
	}
	if f := r.fault(); f != nil {
		return r.stalledRefusal(f)
	}
	if st := r.state(); st.BelowFloor {
		return standing(st)
	}
	if n := r.scopeUnknown.Load(); n > 0 {
		return scopeUnknownRefusal(n, r.stream)
	}
	if why := r.wrongLogWhy(); why != "" {
		return wrongStream(r.stream, why)
	}
	if t := r.Truncated(); t != nil {
		return truncatedRefusal(r.stream, t)
	}
	if r.evicted.Load() {
		// Refused before anything is appended, so it names no position:
		// another data node takes the write under the same id at once.
		ref := engine.Refuse(engine.CodeEvicted, "this node (%s) has been evicted from the fleet, so nothing it appends to %s would apply anywhere; nothing was written. Send the write to another data node under the same op_id %s, or readmit this one.", r.cfg.Node, r.stream, opID)
		return ref.With("writer", r.cfg.Node)
	}
	return nil
}

// rounds decides and publishes until the broker takes the append, a
// refusal holds at the log's end, or the rounds' budget is spent: a write
// that loses the arbitration to another writer on its subject is decided
// again, as often as the write wait allows (and at least WriteRounds
// times), so contention is not the caller's problem.
func (r *Replica) rounds(ctx context.Context, op Op, out Written, decide Decide) (Written, error) {
	// The budget is real waiting, not an instant: measured on the
	// monotonic clock, never the replica's (a test's) clock.
	start := time.Now()
	settled := false
	markless := false // a creation mark was refused: this write asks
	for round := 0; round < r.cfg.WriteRounds || time.Since(start) < r.cfg.WriteWait; round++ {
		if round > 0 {
			// The applier moved: the op's own first copy may be what it passed.
			if answered, res, err := r.fromLedger(ctx, op, out); answered {
				return res, err
			}
		}
		began := time.Now()
		prop, anchor, err := r.decide(ctx, decide)
		r.cfg.Metrics.WritePhase(metrics.PhaseDecide, time.Since(began))
		if err != nil {
			// A refusal decided from this node's rows is only as strong as
			// the rows: establish the log's end, catch up, decide again.
			if settled || !engine.DecidedFromRows(err) {
				return out, err
			}
			if err := r.syncToLogEnd(ctx); err != nil {
				return out, err
			}
			settled = true
			continue
		}
		if err := r.coveredWrite(ctx, prop.Scope); err != nil {
			return out, err
		}
		var slot *markSlot
		if anchor == 0 {
			if slot, err = r.atZero(ctx, !markless); err != nil {
				return out, err
			}
		}
		data, err := r.encode(ctx, op, prop)
		if err != nil {
			r.putMark(slot, false)
			return out, err
		}
		began = time.Now()
		again := func() (PubAck, error) { return r.publish(ctx, op, prop, data, anchor, slot) }
		ack, err := again()
		answered := time.Now()
		r.cfg.Metrics.WritePhase(metrics.PhaseAppend, answered.Sub(began))
		if r.markRefused(slot, err) {
			// The broker stored nothing: ask the creation instant next round.
			r.putMark(slot, false)
			markless = true
			continue
		}
		done, res, err := r.answerPublish(ctx, op, out, prop.Subject, ack, err, again)
		r.putMark(slot, done && err == nil)
		r.cfg.Metrics.WritePhase(metrics.PhaseSettle, time.Since(answered))
		if done {
			return res, err
		}
	}
	return out, engine.Refuse(engine.CodeConflict, "other writes to the same object kept landing first for the whole write wait (%v); retry with op_id %s.", r.cfg.WriteWait, out.OpID)
}

// atZero readies a write at an expectation of zero: a slot whose
// creation mark it rides, or the stream's creation instant asked and
// compared with the rows' (checkCreatedBeforeZero, coalesced) — with the
// unmarked slot it took, if any, to be marked behind it. A write whose
// mark was refused (mayRide false) asks; a marked slot it takes then is
// left for another write to ride.
func (r *Replica) atZero(ctx context.Context, mayRide bool) (*markSlot, error) {
	slot, marking := r.takeMark()
	if slot.marked() {
		if mayRide {
			return slot, nil
		}
		r.freeMark(slot)
		slot = nil
	}
	if marking {
		r.marks.asked.Add(1)
	}
	began := time.Now()
	err := r.zero.check(ctx, r.checkCreatedBeforeZero)
	r.cfg.Metrics.WritePhase(metrics.PhaseCheck, time.Since(began))
	if err != nil {
		r.putMark(slot, false)
		return nil, err
	}
	return slot, nil
}

// publish appends the proposal's record (data) under op, after the
// ordinary ceiling's check (a write past it would spend the gate
// records' reserve): held to the anchor it was decided against as the
// expected last subject sequence, or, where it rides a creation mark
// (slot, zeromark.go), to the mark being the last record on its subject.
func (r *Replica) publish(ctx context.Context, op Op, prop *Proposal, data []byte, anchor uint64, slot *markSlot) (PubAck, error) {
	pctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
	defer cancel()
	if !isNodeGate(prop.Kind) {
		if err := r.room(pctx, storedSize(prop.Subject, op.ID.String(), len(data))); err != nil {
			return PubAck{}, err
		}
	}
	r.appends.begin()
	defer r.appends.end()
	if slot.marked() {
		r.marks.rode.Add(1)
		return r.cfg.Log.(MarkingLog).PublishOnMark(pctx, prop.Subject, data, op.ID.String(), slot.subject, slot.seq)
	}
	return r.cfg.Log.Publish(pctx, prop.Subject, data, op.ID.String(), &anchor)
}

// answerPublish turns the broker's answer to an append into the write's
// answer; done is false when the write lost the arbitration to another
// writer and is decided again once this node has applied the winner.
func (r *Replica) answerPublish(ctx context.Context, op Op, out Written, subject string, ack PubAck, err error, again func() (PubAck, error)) (bool, Written, error) {
	opID := out.OpID
	var wrong *WrongSequenceError
	switch {
	case err == nil && ack.Duplicate:
		// The broker collapsed this append onto an earlier copy: that
		// copy is the answer, provided it is the same call.
		if msg, gerr := r.cfg.Log.Get(ctx, ack.Seq); gerr == nil {
			if ref := r.sameCall(op, subject, msg); ref != nil {
				return true, out, ref
			}
		}
		r.noteLogEnd(ack.Seq)
		res, err := r.answerLanded(ctx, out, ack.Seq, true)
		return true, res, err
	case err == nil:
		r.noteLogEnd(ack.Seq)
		res, err := r.answerLanded(ctx, out, ack.Seq, false)
		return true, res, err
	case errors.As(err, &wrong):
		// Lost the arbitration, or a retry whose first copy landed.
		last, lerr := r.cfg.Log.LastOnSubject(ctx, subject)
		if lerr == nil && last.MsgID == opID {
			if ref := r.sameCall(op, subject, last); ref != nil {
				return true, out, ref
			}
			r.noteLogEnd(last.Seq)
			res, err := r.answerLanded(ctx, out, last.Seq, true)
			return true, res, err
		}
		target := wrong.Last
		if lerr == nil {
			target = max(target, last.Seq)
		}
		if err := r.waitFor(ctx, target, "the record on "+subject+" that won the arbitration"); err != nil {
			return true, out, err
		}
		return false, out, nil
	case errors.Is(err, ErrNoQuorum):
		// The broker answered and stored nothing: a refusal, not an
		// unknown. An earlier attempt under the same id may still have
		// landed, which the retry's ledger or log read answers.
		return true, out, engine.Refuse(engine.CodeNoQuorum, "no majority of the broker's cluster took this append on %s (%v); this attempt wrote nothing. Retry with op_id %s after the hint; if it persists, a member is down or partitioned.", r.stream, err, opID).With("op_id", opID)
	case errors.Is(err, ErrLogFull):
		return true, out, engine.Refuse(engine.CodeLogFull, "%s is at the byte ceiling its ordinary appends are held to; nothing was written. Raise it with `crewlet retention set-capacity`, or unblock the trim.", r.stream)
	case errors.Is(err, ErrVolumeFull) && !errors.Is(err, ErrNoAnswer):
		return true, out, volumeFull(r.stream, opID, err)
	}
	res, err := r.resolveLost(ctx, op, out, subject, err, again)
	return true, res, err
}

// encode is the record a proposal appends under op, checked and encoded.
func (r *Replica) encode(ctx context.Context, op Op, prop *Proposal) ([]byte, error) {
	version, err := r.stamp(prop)
	if err != nil {
		return nil, err
	}
	rec := &record.Record{Kind: prop.Kind, Version: version, OpID: op.ID.String(), Writer: r.cfg.Node,
		Generation: r.generation(), Subject: prop.Subject, Scope: prop.Scope, Digest: op.Digest, By: engine.ActorOf(ctx)}
	if rec.Payload, err = json.Marshal(prop.Payload); err != nil {
		return nil, err
	}
	if err := rec.Validate(); err != nil {
		return nil, err
	}
	return record.Encode(rec)
}

// syncToLogEnd establishes the log's end with a barrier append (coalesced
// with the linearizable reads in flight) and waits, within the read
// budget, for this node's applier to pass it: the rows are then at least
// as new as anything acknowledged before the call. It refuses with the
// read refusals (no_quorum, broker_unreachable, behind, maintenance, ...)
// when the end cannot be established.
func (r *Replica) syncToLogEnd(ctx context.Context) error {
	_, err := r.admit(ctx, engine.ReadOptions{Level: engine.Linearizable})
	return err
}

// Settle runs fn and, when it refuses with a code decided from this node's
// rows (not_found, stale, ...; engine.DecidedFromRows), establishes the
// log's end, catches up and runs fn again: a refusal is answered only when
// it still holds at the log's end, never from a copy that is merely
// behind.
func (r *Replica) Settle(ctx context.Context, fn func(ctx context.Context) error) error {
	err := fn(ctx)
	if !engine.DecidedFromRows(err) {
		return err
	}
	if serr := r.syncToLogEnd(ctx); serr != nil {
		return serr
	}
	return fn(ctx)
}

// lateKey answers a client-minted key brought back after its mint window:
// a retry of a write that landed is answered from the ledger however late
// it comes (looked at again once this node has caught up with the log's
// end, since the first copy may be past what it has applied); a key under
// which nothing landed anywhere is refused, since a first use must come
// within the window.
func (r *Replica) lateKey(ctx context.Context, op Op, out Written) (Written, error) {
	if err := r.syncToLogEnd(ctx); err != nil {
		return out, err
	}
	if answered, res, err := r.fromLedger(ctx, op, out); answered {
		return res, err
	}
	key := op.ID.String()
	if ledger.IsClientForm(op.ID.UUID) {
		key = ledger.KeyOf(op.ID.UUID).String()
	}
	return out, engine.Refuse(engine.CodeInvalidArgument, "op_id %s was minted at %s, more than %v from now, and no write under it landed on %s: nothing was written. Mint a fresh v7 UUID just before the first attempt (a key is good for a first use within %v of its instant, and for retries of a write that landed for ever).",
		key, op.ID.Minted.UTC().Format(time.RFC3339), ledger.ClientMintWindow, r.stream, ledger.ClientMintWindow).With("key", "op_id")
}

// fromLedger answers an operation the ledger records: applied at the first
// copy's position however late the retry, or op_reused when the id comes
// with another write.
func (r *Replica) fromLedger(ctx context.Context, op Op, out Written) (bool, Written, error) {
	// Looked up by the id's UUID, so a key brought back under another name
	// (a client-minted key sent with a write to another object) is found.
	e, ok, err := ledger.LookupKey(ctx, r.stmts, op.ID.UUID.String())
	if err != nil {
		return true, out, err
	}
	if !ok {
		return false, out, nil
	}
	p := engine.Position{Stream: r.cfg.Streams[engine.Domain(e.Domain)], Generation: e.Generation, Seq: e.Seq}
	if e.Domain == string(r.domain) {
		p.Stream = r.stream
	}
	if e.OpID != out.OpID || e.Domain != string(r.domain) || (op.Digest != "" && e.Digest != "" && e.Digest != op.Digest) {
		return true, out, opReused(out.OpID, p, e.Subject)
	}
	res, err := r.answerLanded(ctx, out, e.Seq, true)
	return true, res, err
}

func opReused(opID string, p engine.Position, subject string) *engine.Refusal {
	ref := engine.Refuse(engine.CodeOpReused, "op_id %s already names another write, which landed at %s (on %s); a different write takes a fresh id: call again without op_id.", opID, p.Token(), subject)
	ref.Position = &p
	return ref
}

// sameCall checks that the copy of the op found on the log is this call:
// the same subject and, where both carry one, the same argument digest.
func (r *Replica) sameCall(op Op, subject string, msg StoredMsg) *engine.Refusal {
	p := r.Position(msg.Seq)
	if msg.Subject != subject {
		return opReused(op.ID.String(), p, msg.Subject)
	}
	if rec, err := record.Decode(msg.Data); err == nil && op.Digest != "" && rec.Digest != "" && rec.Digest != op.Digest {
		return opReused(op.ID.String(), p, msg.Subject)
	}
	return nil
}

// unvouched answers an operation minted before this node's ledger
// watermark whose row the ledger does not hold: unknown, before anything
// is published, rather than decided a second time against rows that may
// already hold its first copy. Only a refusal about the node itself (a
// record it cannot read, an object deleted for good) stands either way.
func (r *Replica) unvouched(ctx context.Context, op Op, out Written, decide Decide) (Written, error) {
	refusal := ""
	if _, _, err := r.decide(ctx, decide); err != nil {
		ref, ok := engine.AsRefusal(err)
		if !ok {
			return out, err
		}
		switch ref.Code {
		case engine.CodeDeleted, engine.CodeDeferred, engine.CodeDeferredScopeUnknown:
			return out, ref
		}
		refusal = string(ref.Code)
	}
	minted := ""
	if op.ID.EngineMinted() {
		minted = op.ID.Minted.UTC().Format("2006-01-02T15:04:05.000Z07:00")
	}
	r.log.Warn(engine.EvWriteUnvouched, engine.LogOpID, out.OpID, "minted_at", minted, "refusal", refusal, engine.LogStream, r.stream)
	out.Outcome, out.Unvouched = engine.Unknown, true
	out.Message = "This operation was minted before this node's ledger may have lost rows to its 30-day sweep, and the ledger holds no row for it: whether it landed cannot be said here. A node whose ledger lost nothing that far back can answer it; if it landed, its record is on the log."
	return out, nil
}

// decide runs the domain's decision and reads the subject's anchor inside
// the same snapshot, so the expectation is exactly what was decided against.
func (r *Replica) decide(ctx context.Context, decide Decide) (*Proposal, uint64, error) {
	tx, err := sqlite.BeginRead(ctx, r.cfg.DB)
	if err != nil {
		return nil, 0, err
	}
	defer tx.Rollback()
	prop, err := decide(ctx, tx)
	if err != nil {
		return nil, 0, err
	}
	if prop == nil || prop.Subject == "" {
		return nil, 0, fmt.Errorf("statelog: %s decision proposed no subject", r.domain)
	}
	anchor, err := Anchor(ctx, sqlite.Cached{Tx: tx, S: r.stmts}, r.domain, prop.Subject)
	return prop, anchor, err
}

// resolveLost settles a publish the broker did not answer from the log
// before anything is called unknown: the newest record on the subject
// carrying this op id is the answer.
//
// Where the log answers and the newest record on the subject is another,
// the append is made again under the same op id (again, when given): the
// broker's duplicate window collapses it onto a first copy that landed
// after all, and otherwise it lands now. An append lost with a stream
// leader that died is then answered applied, pending or no_quorum once
// the survivors elect the next, rather than unknown.
func (r *Replica) resolveLost(ctx context.Context, op Op, out Written, subject string, cause error, again func() (PubAck, error)) (Written, error) {
	last, err := r.lastOnSubjectSoon(ctx, subject)
	if err == nil && last.MsgID == out.OpID {
		if ref := r.sameCall(op, subject, last); ref != nil {
			return out, ref
		}
		r.noteLogEnd(last.Seq)
		return r.answerLanded(ctx, out, last.Seq, true)
	}
	if (err == nil || errors.Is(err, ErrNoMessage)) && errors.Is(cause, ErrVolumeFull) {
		// The log answers and the record is not on it, and the broker's
		// volume is full: its store failed, which the broker never answers.
		return out, volumeFull(r.stream, out.OpID, cause)
	}
	if (err == nil || errors.Is(err, ErrNoMessage)) && again != nil {
		// Only a landing answers: any other answer to the second append
		// leaves the first as much in doubt as it was.
		if ack, perr := again(); perr == nil {
			_, res, rerr := r.answerPublish(ctx, op, out, subject, ack, nil, nil)
			return res, rerr
		}
	}
	r.log.Warn(engine.EvPublishUnknown, engine.LogOpID, out.OpID, engine.LogStream, r.stream, "subject", subject, engine.LogErr, cause.Error())
	out.Outcome = engine.Unknown
	out.Message = "Nothing could be established about this write: it may be on the log and it may not. Retry with the same op_id, never a fresh one."
	return out, nil
}

// lastOnSubjectSoon reads the newest record on subject, asking again
// while the broker does not answer, for up to PublishTimeout or the
// log's ElectionBound, whichever is longer. An append whose answer was
// lost is most often one in flight to a stream leader that died, and the
// log answers again as soon as the survivors elect the next, which the
// broker bounds; a single read made during that election would leave a
// record that landed called unknown. Only an answer is trusted: the
// record missing from a leader's answer may yet be committed by it, so
// that stays unknown.
func (r *Replica) lastOnSubjectSoon(ctx context.Context, subject string) (StoredMsg, error) {
	deadline := time.Now().Add(max(r.cfg.PublishTimeout, r.cfg.ElectionBound))
	for {
		// Each ask is short, so one lost in the election does not spend
		// the whole wait.
		ask := time.Now().Add(time.Second)
		if ask.After(deadline) {
			ask = deadline
		}
		actx, cancel := context.WithDeadline(ctx, ask)
		last, err := r.cfg.Log.LastOnSubject(actx, subject)
		cancel()
		if err == nil || !errors.Is(err, ErrNoAnswer) && !errors.Is(err, ErrNoQuorum) || ctx.Err() != nil || !time.Now().Before(deadline) {
			return last, err
		}
		select {
		case <-ctx.Done():
			return last, err
		case <-r.closing:
			// This node is closing: its broker connection with it.
			return last, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// noteOwn records seq as this node's own last write on the log: a write
// answered (applied, pending, or refused after it landed) at seq. The log
// end was noted already, where the append's landing was learnt.
func (r *Replica) noteOwn(seq uint64) {
	if r.cfg.OwnWrite != nil {
		r.cfg.OwnWrite(r.Position(seq))
	}
	for {
		cur := r.ownLast.Load()
		if seq <= cur || r.ownLast.CompareAndSwap(cur, seq) {
			return
		}
	}
}

// answerLanded waits up to the write wait for this node to apply the
// record at seq: applied, or pending with its position and lag. Where the
// ledger names another position for the op (an earlier copy), that is the
// answer.
func (r *Replica) answerLanded(ctx context.Context, out Written, seq uint64, replayed bool) (Written, error) {
	out.Seq, out.Replayed = seq, replayed
	out.Position = r.Position(seq).Token()
	wctx, cancel := context.WithTimeout(ctx, r.cfg.WriteWait)
	err := r.WaitApplied(wctx, seq)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		out.Outcome = engine.Pending
		out.Lag = r.lag(r.Applied())
		out.Message = "The record is durable at its position and this node has not applied it yet. Do not retry: the write succeeded."
		return out, nil
	}
	if r.landed.applied(seq, out.OpID) {
		// This node's applier wrote the op's ledger row at seq, and it
		// committed: what the ledger would answer.
		out.Outcome = engine.Applied
		out.Answer = r.answers.take(out.OpID, seq)
		return out, nil
	}
	e, ok, err := ledger.Lookup(ctx, r.stmts, out.OpID)
	if err != nil {
		return out, err
	}
	if ok {
		if e.Seq != seq {
			out.Seq, out.Replayed = e.Seq, true
			out.Position = r.Position(e.Seq).Token()
		}
		out.Outcome = engine.Applied
		return out, nil
	}
	// Applied past the record and no ledger row: a gate dropped it, or the
	// sweep took the row of a record this node did apply.
	gate, writer, dropped, err := r.GatedAt(ctx, seq)
	if err != nil {
		return out, err
	}
	if dropped {
		return out, r.gatedRefusal(ctx, out, seq, gate, writer)
	}
	if msg, gerr := r.cfg.Log.Get(ctx, seq); gerr == nil && msg.MsgID == out.OpID {
		out.Outcome = engine.Applied
		return out, nil
	}
	return out, fmt.Errorf("statelog: %s applied past %d and neither the ledger, a gate nor the log accounts for op %s", r.stream, seq, out.OpID)
}

// gatedRefusal refuses a write whose record applies nowhere, under the
// gate that holds it, logging statelog_write_gated. The gate named is the
// one that holds the record now (asked again, in order, of the record the
// log holds), which can differ from the one that dropped it at its apply:
// once its object is purged, a record an eviction dropped is refused
// deleted. A deleted refusal names no writer: the purge refuses the
// asking node's own write exactly as it did the copy's, on every retry.
func (r *Replica) gatedRefusal(ctx context.Context, out Written, seq uint64, gate, writer string) error {
	p := r.Position(seq)
	subject := ""
	if m, err := r.cfg.Log.Get(ctx, seq); err == nil {
		subject = m.Subject
		if now := r.gateNow(ctx, m); now != "" {
			gate = now
		}
	}
	attrs := []any{engine.LogOpID, out.OpID, "subject", subject, engine.LogGate, gate, engine.LogPosition, p.Token(), engine.LogWriter, writer}
	r.log.Warn(engine.EvWriteGated, attrs...)
	code := engine.Code(gate)
	if _, known := engine.Codes[code]; !known {
		code = engine.CodeEvicted
	}
	if code == engine.CodeDeleted {
		ref := engine.Refuse(code, "the record this write appended at %s applies nowhere: its object was purged, and the purge holds every record about it for ever.", p.Token())
		ref.Position = &p
		return ref.With("gate", gate).With("op_id", out.OpID)
	}
	ref := engine.Refuse(code, "the record this write appended at %s applies nowhere: the %s gate holds it (writer %s).", p.Token(), gate, writer)
	ref.Position = &p
	return ref.With("gate", gate).With("writer", writer).With("op_id", out.OpID)
}

// gateNow asks the gates whether one holds the record m now, and names
// the first; "" when none does or the record will not decode. The
// domain's own (the object's marker) are asked first, then all in the
// applier's order: a purge holds the record for ever whatever else does,
// so once its object is purged a record an eviction dropped is refused
// deleted, as the seeds say, even while its writer is still evicted.
func (r *Replica) gateNow(ctx context.Context, m StoredMsg) string {
	rec, err := record.DecodeUpTo(m.Data, r.format)
	if err != nil {
		return ""
	}
	tx, err := sqlite.BeginRead(ctx, r.cfg.DB)
	if err != nil {
		return ""
	}
	defer tx.Rollback()
	gates := r.gates
	if gd, ok := r.cfg.Domain.(GatedDomain); ok {
		gates = append(append([]Gate{}, gd.Gates()...), r.gates...)
	}
	for _, g := range gates {
		if holds, err := g.Holds(ctx, tx, rec, m.Seq); err == nil && holds {
			return g.Name()
		}
	}
	return ""
}

// OpFor is the operation a domain's write call runs under (ledger.ForCall:
// derived for a seat, brought back, client-minted, or fresh), with the
// id's problems as refusals: op_reused for an id naming another write,
// invalid_argument for a malformed one.
func OpFor(now time.Time, w engine.WriteOptions, verb, object string) (Op, error) {
	op, err := ledger.ForCall(now, w.OpID, w.Unit, w.UnitStart, w.CallIndex, verb, object, w.Digest)
	if err != nil {
		var ce *ledger.CallError
		if errors.As(err, &ce) && ce.Reused {
			return op, engine.Refuse(engine.CodeOpReused, "%s.", strings.TrimSuffix(ce.Msg, "."))
		}
		return op, engine.Refuse(engine.CodeInvalidArgument, "%s.", strings.TrimSuffix(err.Error(), "."))
	}
	return op, nil
}

// volumeFull refuses an append the broker's full volume could not store.
func volumeFull(stream, opID string, err error) *engine.Refusal {
	return engine.Refuse(engine.CodeVolumeFull, "the volume holding the broker's store is full (%v), so nothing was written to %s; this is the disk, not the log's ceiling. Free space on the volume of stream.store_dir, then retry with op_id %s.", err, stream, opID).With("op_id", opID)
}
