package statelog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// A node's rows are keyed to one stream: the one created at the instant
// its checkpoint names (stream_created_at), holding at the checkpoint's
// sequence the record stored at checkpoint_stored_at. When the live log
// is not that one, applying on would key new records to rows from another
// history, so the domain stops applying, refuses wrong_stream, and the
// node stays up with its other domains serving (Read Consistency ›
// wrong_stream). It is found at boot, by the position heartbeat
// (VerifyLog) and by any write at an expectation of zero.

// The cases a wrong log is found in.
const (
	// WrongLogRecreated: the stream was deleted and created again.
	WrongLogRecreated = "recreated"
	// WrongLogRestored: the checkpoint is past the log's end — a broker
	// restored from an older copy of its store.
	WrongLogRestored = "restored"
	// WrongLogDiverged: the log holds, at the checkpoint, another record
	// than the one this node consumed there — the restored log was
	// written past this node's rows.
	WrongLogDiverged = "diverged"
	// WrongLogGenerationPassed: a peer re-anchored the log past this
	// node's generation; it continues from that peer's rows, which this
	// node adopts as a snapshot.
	WrongLogGenerationPassed = "generation_passed"
)

// Log lines of a wrong log (component engine for the recreated stream,
// the loop around the log; statelog for the rest).
const (
	EvStreamRecreated      = "statelog_stream_recreated"
	EvLogDiverged          = "statelog_log_diverged"
	EvCheckpointUnverified = "statelog_checkpoint_unverified"
	EvGenerationPassed     = "statelog_generation_passed"
	// EvGenerationHolderUnread: a beat could not read whether the peer
	// that opened a passed generation is evicted (engine/fleet).
	EvGenerationHolderUnread = "statelog_generation_holder_unread"
	// EvGenerationsUnread: a beat read the positions register but could
	// not establish which generation the fleet is on (engine/fleet).
	EvGenerationsUnread = "statelog_generations_unread"
	// EvBehindAReanchor: a boot asks the fleet for a snapshot at a
	// generation a peer re-anchored its log into (engine/node).
	EvBehindAReanchor = "statelog_behind_a_reanchor"
)

// WrongLog is the verdict that this node's log is not its rows' log.
type WrongLog struct {
	Case string
	Why  string
	// FleetGeneration and Peer name the generation a peer re-anchored
	// the log into, and the peer (WrongLogGenerationPassed).
	FleetGeneration uint64
	Peer            string
}

// wrongLogState holds the verdict, and whether the record at the
// checkpoint is still to be compared (it could not be read).
type wrongLogState struct {
	mu         sync.Mutex
	verdict    *WrongLog
	unverified bool
}

// WrongLog is the verdict that this node's log is not the one its rows are
// keyed to, nil while it is.
func (r *Replica) WrongLog() *WrongLog {
	r.wrong.mu.Lock()
	defer r.wrong.mu.Unlock()
	return r.wrong.verdict
}

// wrongLogWhy is the verdict's sentence, "" while the log is the rows'.
func (r *Replica) wrongLogWhy() string {
	if v := r.WrongLog(); v != nil {
		return v.Why
	}
	return ""
}

// judgeLog compares the live log with the checkpoint: its creation
// instant, its end, and the record at the checkpoint. A verdict is
// returned once and kept; unverified says the record at the checkpoint
// could not be read, so nothing past it may be applied until it is.
func (r *Replica) judgeLog(ctx context.Context, cp Checkpoint, info LogInfo) (v *WrongLog, unverified bool) {
	if v := r.recreated(cp, info); v != nil {
		return v, false
	}
	switch {
	case info.Leaderless:
		// A member cut off from its group answers from its own copy:
		// nothing it says about the end is judged.
		return nil, false
	case cp.Seq > info.LastSeq:
		return &WrongLog{Case: WrongLogRestored, Why: fmt.Sprintf("the checkpoint of %s is at %d but the log ends at %d: a broker restored from an older copy of its store",
			r.stream, cp.Seq, info.LastSeq)}, false
	case cp.Seq == 0 || cp.Seq < info.FirstSeq || cp.CheckpointStoredAt.IsZero() || r.cfg.Compacted:
		// Nothing consumed yet, trimmed past (below the floor, judged
		// apart), no instant kept, or a keyed table whose old values
		// the broker replaces: nothing to compare.
		return nil, false
	}
	m, err := r.cfg.Log.Get(ctx, cp.Seq)
	switch {
	case errors.Is(err, ErrNoMessage):
		return nil, false // deleted from inside the log: the hole is judged apart
	case err != nil:
		return nil, true
	case !m.Time.Equal(cp.CheckpointStoredAt):
		return &WrongLog{Case: WrongLogDiverged, Why: fmt.Sprintf("%s holds at %d another record (stored at %s) than the one this node consumed there (stored at %s): the restored log was written past this node's rows",
			r.stream, cp.Seq, m.Time.UTC().Format(time.RFC3339Nano), cp.CheckpointStoredAt.UTC().Format(time.RFC3339Nano))}, false
	}
	return nil, false
}

// recreated is the verdict that the live log was created at another
// instant than the one the checkpoint is keyed to (deleted and created
// again), nil when it was not or either instant is unknown.
func (r *Replica) recreated(cp Checkpoint, info LogInfo) *WrongLog {
	if cp.StreamCreatedAt.IsZero() || info.Created.IsZero() || info.Created.Equal(cp.StreamCreatedAt) {
		return nil
	}
	return &WrongLog{Case: WrongLogRecreated, Why: fmt.Sprintf("%s was deleted and created again (at %s; this node's rows are keyed to the stream created at %s)",
		r.stream, info.Created.UTC().Format(time.RFC3339Nano), cp.StreamCreatedAt.UTC().Format(time.RFC3339Nano))}
}

// setWrongLog records a verdict once, says so once, and stops the
// applier: the domain applies nothing past its checkpoint and refuses
// wrong_stream until it is re-anchored or its rows are replaced.
func (r *Replica) setWrongLog(v *WrongLog, cp Checkpoint) bool {
	r.wrong.mu.Lock()
	first := r.wrong.verdict == nil
	if first {
		r.wrong.verdict = v
		r.wrong.unverified = false
	}
	r.wrong.mu.Unlock()
	if !first {
		return false
	}
	pos := r.Position(cp.Seq).Token()
	switch v.Case {
	case WrongLogGenerationPassed:
		r.cfg.Logger.Warn(EvGenerationPassed, engine.LogComponent, engine.ComponentEngine, engine.LogDomain, string(r.domain),
			engine.LogStream, r.stream, "generation", r.generation(), "fleet_generation", v.FleetGeneration, "peer", v.Peer, "why", v.Why)
	case WrongLogRecreated:
		r.cfg.Logger.Error(EvStreamRecreated, engine.LogComponent, engine.ComponentEngine, engine.LogDomain, string(r.domain),
			engine.LogStream, r.stream, engine.LogPosition, pos, "stream_created_at", cp.StreamCreatedAt, "why", v.Why)
	default:
		r.log.Error(EvLogDiverged, engine.LogStream, r.stream, engine.LogPosition, pos, "case", v.Case,
			"checkpoint_stored_at", cp.CheckpointStoredAt, "why", v.Why)
	}
	return true
}

// setUnverified notes, once, that the record at the checkpoint could not
// be read to compare it.
func (r *Replica) setUnverified(cp Checkpoint, err error) {
	r.wrong.mu.Lock()
	first := !r.wrong.unverified && r.wrong.verdict == nil
	r.wrong.unverified = true
	r.wrong.mu.Unlock()
	if first {
		r.log.Warn(EvCheckpointUnverified, engine.LogStream, r.stream, engine.LogPosition, r.Position(cp.Seq).Token(), engine.LogErr, fmt.Sprint(err))
	}
}

// VerifyLog is the heartbeat's check of the live log against this node's
// rows. A log found to be another stops this domain's applier and refuses
// its reads and writes wrong_stream; an unread log or record leaves the
// verdict where it was.
func (r *Replica) VerifyLog(ctx context.Context) {
	if r.WrongLog() != nil {
		return
	}
	// The checkpoint first: every record it covers was on the log before
	// the log's end is read after it, so a right log ends at or past it.
	cp, err := r.Checkpoint(ctx)
	if err != nil {
		return
	}
	info, err := r.cfg.Log.Info(ctx)
	if err != nil {
		return
	}
	v, unverified := r.judgeLog(ctx, cp, info)
	switch {
	case v != nil:
		if r.setWrongLog(v, cp) && r.sub != nil {
			go r.sub.Stop()
		}
	case unverified:
		r.setUnverified(cp, fmt.Errorf("the record at %d could not be read", cp.Seq))
	default:
		r.wrong.mu.Lock()
		r.wrong.unverified = false
		r.wrong.mu.Unlock()
	}
}

// GenerationPassed is the heartbeat's finding that peer re-anchored this
// log into generation gen, past this node's: the domain refuses
// wrong_stream from then on, its applier stopped, until this node adopts a
// snapshot from the new generation (at its next boot, the log's new first
// sequence past its checkpoint). A verdict already given stays, and names
// the passing peer from then on.
//
// Where the peer is evicted, its generation applies nowhere: the verdict
// names an abandoned reanchor of this log instead.
func (r *Replica) GenerationPassed(ctx context.Context, peer string, gen uint64, peerEvicted bool) {
	if gen <= r.generation() {
		return
	}
	cp, err := r.Checkpoint(ctx)
	if err != nil {
		return
	}
	v := &WrongLog{Case: WrongLogGenerationPassed, FleetGeneration: gen, Peer: peer,
		Why: fmt.Sprintf("%s re-anchored %s into generation %d, past this node's %d, so it continues from that peer's rows; this node adopts a snapshot from the new generation when it next boots", peer, r.stream, gen, r.generation())}
	if peerEvicted {
		v.Why = fmt.Sprintf("%s, which is evicted, opened generation %d of %s past this node's %d: its generation applies nowhere; re-anchor this log abandoned (crewlet retention reanchor --case abandoned)", peer, gen, r.stream, r.generation())
	}
	r.wrong.mu.Lock()
	prev := r.wrong.verdict
	passedBefore := prev != nil && prev.Case == WrongLogGenerationPassed
	if prev != nil && !passedBefore {
		r.wrong.verdict = nil // replaced: the passed verdict says what clears it
	}
	r.wrong.mu.Unlock()
	if passedBefore {
		return
	}
	if r.setWrongLog(v, cp) && r.sub != nil {
		go r.sub.Stop()
	}
}

// verifiedBeforeApply is the applier's ask before it applies past a
// checkpoint the boot or a heartbeat could not compare: an error (retried
// in place) until the record at the checkpoint is read and matches.
func (r *Replica) verifiedBeforeApply(ctx context.Context, cp Checkpoint) error {
	r.wrong.mu.Lock()
	unverified, verdict := r.wrong.unverified, r.wrong.verdict
	r.wrong.mu.Unlock()
	if verdict != nil {
		return &StopError{Seq: cp.Seq, Why: "this node's log is not the one its rows are keyed to: " + verdict.Why}
	}
	if !unverified {
		return nil
	}
	r.VerifyLog(ctx)
	r.wrong.mu.Lock()
	unverified, verdict = r.wrong.unverified, r.wrong.verdict
	r.wrong.mu.Unlock()
	switch {
	case verdict != nil:
		return &StopError{Seq: cp.Seq, Why: "this node's log is not the one its rows are keyed to: " + verdict.Why}
	case unverified:
		return fmt.Errorf("statelog: the record at %s's checkpoint %d could not be read to compare it with the one this node consumed there", r.stream, cp.Seq)
	}
	return nil
}

// checkCreatedBeforeZero is a write's check before it appends at an
// expectation of zero (its subject holds nothing, as this node's rows
// see it): on a stream deleted and created again every subject is empty,
// so the broker would take the append. The stream's creation instant is
// read from the broker and compared with the one the rows are keyed to.
// Only that instant is compared: the rest of judgeLog (the record at the
// checkpoint read back, a second broker request) says nothing about a
// recreated stream, and this check runs before every create, coalesced
// (zeroCheck), where that request was half of each one's wait at c=64.
func (r *Replica) checkCreatedBeforeZero(ctx context.Context) error {
	// Unanswered: the append's own answer says what it can.
	_, _, err := r.judgeCreated(ctx)
	return err
}

// judgeCreated asks the stream's creation instant and compares it with
// the one the rows are keyed to (keyed, zero before the rows are keyed
// to any), refusing wrong_stream where they differ: the verdict is
// recorded and the applier stopped, once. answered is false, with no
// error, where the broker did not answer.
func (r *Replica) judgeCreated(ctx context.Context) (keyed time.Time, answered bool, err error) {
	cp, err := r.Checkpoint(ctx)
	if err != nil {
		return time.Time{}, false, err
	}
	info, err := r.cfg.Log.Info(ctx)
	if err != nil {
		return cp.StreamCreatedAt, false, nil
	}
	if v := r.recreated(cp, info); v != nil {
		if r.setWrongLog(v, cp) && r.sub != nil {
			go r.sub.Stop()
		}
		return cp.StreamCreatedAt, true, wrongStream(r.stream, v.Why)
	}
	return cp.StreamCreatedAt, true, nil
}

// wrongStream is the refusal of a domain whose log is not its rows' log.
func wrongStream(stream, why string) *engine.Refusal {
	return engine.Refuse(engine.CodeWrongStream, "this node's %s log is not the one its rows are keyed to: %s. See Retention; reads and writes of this domain refuse until it is re-anchored (crewlet retention reanchor) or its rows are replaced.", stream, why).With("domain", stream)
}

// zeroCheck coalesces the creation-instant reads of writes at an
// expectation of zero: a write needs a read that began after it did, so
// the writes queued behind one read in flight take its answer rather than
// each asking the broker (every create is such a write).
type zeroCheck struct {
	mu      sync.Mutex
	startAt time.Time
	err     error
}

func (z *zeroCheck) check(ctx context.Context, read func(context.Context) error) error {
	began := time.Now()
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.startAt.After(began) {
		return z.err
	}
	z.startAt = time.Now()
	z.err = read(ctx)
	return z.err
}
