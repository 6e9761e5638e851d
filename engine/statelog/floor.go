package statelog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// The trim floor as a replica sees it. The floor is published by the
// trimming node (engine/trim) and read by every node's heartbeat, which
// hands it here (SetFloor). Two standings follow from it, and neither is
// ever guessed:
//
//   - floor_unknown: the heartbeat could not read the published floor.
//     A node serving on would serve over a hole it cannot see.
//   - below_floor: the trim removed records this node never applied, so
//     no replay can supply its missing state. The applier finds it (a
//     record below the log's first sequence) or the boot does.
//
// A record missing above the log's first sequence is a different thing:
// a hole that will not close, which stops the applier for good.

// floorState is the published floor as last read (through, at readAt),
// and the error of the last read when it failed.
type floorState struct {
	mu      sync.Mutex
	through uint64
	readAt  time.Time
	err     error
	// published is the position the register last took from this node,
	// at publishedAt (Floor).
	published   uint64
	publishedAt time.Time
}

// SetFloor records the log's published trim floor (every record at or
// below through is one the trim may have removed), or, with err, that the
// floor could not be read (Floor says what follows).
func (r *Replica) SetFloor(through uint64, err error) {
	now := r.cfg.Clock.Now()
	r.floor.mu.Lock()
	defer r.floor.mu.Unlock()
	if err != nil {
		r.floor.err = err
		return
	}
	r.floor.through, r.floor.readAt, r.floor.err = through, now, nil
}

// SetPublished records a position this node's heartbeat published in the
// positions register, and when the register took it: the trim's node term
// never moves the floor past it.
func (r *Replica) SetPublished(seq uint64, at time.Time) {
	r.floor.mu.Lock()
	defer r.floor.mu.Unlock()
	r.floor.published, r.floor.publishedAt = seq, at
}

// PublishedFresh is how long a position the register took vouches for the
// floor while the floor itself cannot be read: longer than a stream
// leader's election (4 to 10 s), short of the trim's minute.
const PublishedFresh = 10 * time.Second

// Floor is the published trim floor as last read, and why the floor is
// unknown where it is. An unreadable floor is never guessed, but it is
// not always unknown: the trim never removes a record a live data node
// has not applied, and this node is one — the floor cannot be past the
// position this node published in the register, for as long as the fleet
// counts it live. So while this node's rows stand at or past a position
// the register took within PublishedFresh, no record it never applied
// can be gone, and the floor last read answers for it; otherwise (a
// position older than that: this node may be cut off, or evicted without
// knowing it) the floor is unknown and its reads and writes refuse
// floor_unknown at once. This keeps a node serving through the floors'
// bucket's leader election without serving over a hole it cannot see.
func (r *Replica) Floor() (uint64, error) {
	r.floor.mu.Lock()
	defer r.floor.mu.Unlock()
	if r.floor.err == nil {
		return r.floor.through, nil
	}
	f := &r.floor
	if !f.publishedAt.IsZero() && r.Applied() >= f.published && !r.evicted.Load() && r.cfg.Clock.Now().Sub(f.publishedAt) <= PublishedFresh {
		return r.floor.through, nil
	}
	return r.floor.through, r.floor.err
}

// BelowFloor reports whether the trim removed records this node never
// applied.
func (r *Replica) BelowFloor() bool { return r.belowFloor.Load() }

// StopError is a failure no retry cures: the applier stops for good on it.
type StopError struct {
	// Seq is the record the applier could not apply.
	Seq uint64
	// BelowFloor says the record is gone below the log's first sequence
	// (trimmed): the node is below the floor, which adoption cures, and
	// no stop line is written for it.
	BelowFloor bool
	FirstSeq   uint64
	Why        string
}

func (e *StopError) Error() string { return e.Why }

// missing judges a record the log answered it does not hold. Below the
// log's first sequence the trim removed it: this node is below the floor.
// Inside the log's range it is a hole the broker will never fill (the
// stream's leader answers for its whole store, and a record once deleted
// never comes back): asked once more after the range is read, it stops
// the applier. Anything unread is an ordinary failure, retried in place.
func (r *Replica) missing(ctx context.Context, seq uint64) error {
	info, err := r.cfg.Log.Info(ctx)
	if err != nil {
		return fmt.Errorf("statelog: record %d is missing from %s and the log's range cannot be read to judge it: %w", seq, r.stream, err)
	}
	if seq < info.FirstSeq {
		return &StopError{Seq: seq, BelowFloor: true, FirstSeq: info.FirstSeq,
			Why: fmt.Sprintf("record %d of %s was trimmed before this node applied it: the log now starts at %d", seq, r.stream, info.FirstSeq)}
	}
	if seq > info.LastSeq {
		return fmt.Errorf("statelog: record %d of %s is past the log's end (%d) as its member answered", seq, r.stream, info.LastSeq)
	}
	if _, err := r.cfg.Log.Get(ctx, seq); !errors.Is(err, ErrNoMessage) {
		if err == nil {
			return fmt.Errorf("statelog: record %d of %s was missing and is back: read it again", seq, r.stream)
		}
		return err
	}
	return &StopError{Seq: seq, FirstSeq: info.FirstSeq,
		Why: fmt.Sprintf("a hole that will not close: record %d of %s is gone from inside the log (%d..%d), deleted rather than trimmed, so the records after it cannot be applied in order", seq, r.stream, info.FirstSeq, info.LastSeq)}
}

// stop ends the applier on a failure no retry cures: below the floor it
// marks the replica so (reads and writes refuse below_floor), otherwise
// it stops the applier for good (reads refuse stalled naming why) and
// writes statelog_applier_stopped once. The reader is stopped too, so
// nothing more is pulled for an applier that will not take it.
func (r *Replica) stop(se *StopError, cp Checkpoint) {
	go r.sub.Stop()
	if se.BelowFloor {
		r.markBelowFloor(cp.Seq, se.FirstSeq)
		return
	}
	r.faultMu.Lock()
	first := r.stopped == nil
	if first {
		r.stopped = se
	}
	r.faultMu.Unlock()
	if first {
		r.log.Error(engine.EvApplierStopped, engine.LogStream, r.stream, engine.LogPosition, r.Position(cp.Seq).Token(),
			"why", se.Why, "seq", se.Seq)
	}
}

// markBelowFloor sets the below-floor standing and says so once, under
// component engine: the line is about the loop around adoption.
func (r *Replica) markBelowFloor(seq, firstSeq uint64) {
	if r.belowFloor.Swap(true) {
		return
	}
	floor, _ := r.Floor()
	r.cfg.Logger.Warn(EvBelowTheFloor, engine.LogComponent, engine.ComponentEngine, engine.LogDomain, string(r.domain),
		engine.LogStream, r.stream, engine.LogPosition, r.Position(seq).Token(), "first_seq", firstSeq, "floor", floor)
}

// EvBelowTheFloor is the line a node writes when it finds the trim has
// removed records it never applied.
const EvBelowTheFloor = "statelog_below_the_floor"

// judgeFloorAtBoot marks a replica whose checkpoint is below the log's
// first surviving record: the records in between are gone. Found at boot
// because a log the trim emptied delivers nothing the applier could find
// the gap by.
func (r *Replica) judgeFloorAtBoot(cp Checkpoint, info LogInfo) {
	if r.cfg.Compacted || info.FirstSeq <= cp.Seq+1 {
		return
	}
	r.markBelowFloor(cp.Seq, info.FirstSeq)
}
