package statelog

import (
	"time"

	"github.com/crewlet/crewlet/engine/record"
)

// A batch of nothing but barriers changes no row: the checkpoint is all a
// transaction for it would write. The applier passes such a batch without
// one — the waiting reads are told at once that the applier is past it —
// and its checkpoint rides the next transaction: the next batch that
// carries anything else, or, when none comes, a checkpoint-only commit
// holdFor after the first barrier held (or once maxHeld are held, or as
// the applier stops cleanly). A linearizable read thus costs the log an
// append and the applier no SQLite commit of its own.
//
// Held barriers are not acknowledged until their checkpoint commits (the
// consumer's ack never passes the checkpoint), and the position register
// and snapshots read the committed checkpoint, so a node that stops with
// barriers held resumes from below them and passes them again: they
// change nothing.
const (
	holdFor = 20 * time.Millisecond
	maxHeld = 256
)

// heldBarriers are the deliveries passed without a transaction, contiguous
// from the checkpoint's next sequence. Only the applier's goroutine
// touches them.
type heldBarriers struct {
	ds    []Delivery
	timer *time.Timer
}

// due fires holdFor after the first barrier was held; nil when none is.
func (h *heldBarriers) due() <-chan time.Time {
	if len(h.ds) == 0 || h.timer == nil {
		return nil
	}
	return h.timer.C
}

// top is the newest sequence the rows stand at: the checkpoint's, or the
// newest barrier held past it.
func (h *heldBarriers) top(cp Checkpoint) uint64 {
	if n := len(h.ds); n > 0 {
		return h.ds[n-1].Seq
	}
	return cp.Seq
}

// pass holds batch when it is nothing but barriers following on from the
// checkpoint (and any barriers already held), telling the waiting reads
// the applier is past them; it reports whether it did. A batch with
// anything else in it — a record, a gap, a redelivery, a barrier this
// build cannot decode — is applied in a transaction as ever, the held
// barriers first.
func (r *Replica) pass(cp Checkpoint, h *heldBarriers, batch []Delivery) bool {
	if len(batch) == 0 || len(h.ds)+len(batch) > maxHeld {
		return false
	}
	if r.cfg.Disabled != nil && r.cfg.Disabled() != nil {
		return false // a disabled applier fails every batch: let it
	}
	next := h.top(cp) + 1
	subject := BarrierSubject(r.domain)
	for _, d := range batch {
		if d.Seq != next || d.Subject != subject {
			return false
		}
		rec, err := record.Decode(d.Data)
		if err != nil || rec.Kind != record.KindBarrier {
			return false
		}
		next++
	}
	if len(h.ds) == 0 {
		if h.timer == nil {
			h.timer = time.NewTimer(holdFor)
		} else {
			h.timer.Reset(holdFor)
		}
	}
	h.ds = append(h.ds, batch...)
	// The log's fill counts them when their checkpoint commits, as it
	// counts every record.
	newest := batch[len(batch)-1]
	r.noteLogEnd(newest.Seq + newest.Pending)
	// A retained record holds applied_through back; otherwise it moves
	// with the barriers, as a committed batch would move it.
	through := cp.AppliedThrough
	if through == cp.Seq {
		through = newest.Seq
	}
	r.progress.set(newest.Seq, through)
	return true
}

// withHeld is batch with the held barriers in front of it (they are
// applied, and their checkpoint committed, in its transaction), and
// forgets them.
func (h *heldBarriers) withHeld(batch []Delivery) []Delivery {
	if len(h.ds) == 0 {
		return batch
	}
	out := make([]Delivery, 0, len(h.ds)+len(batch))
	out = append(append(out, h.ds...), batch...)
	h.ds = h.ds[:0]
	if h.timer != nil {
		h.timer.Stop()
	}
	return out
}
