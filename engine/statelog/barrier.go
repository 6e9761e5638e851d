package statelog

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/crewlet/crewlet/engine/record"
)

// barrierGroup coalesces concurrent linearizable reads of one domain onto
// shared barrier appends. A read that arrives while a barrier is in flight
// joins the next one, never the one in flight: that append may have been
// acknowledged before the read arrived, and would prove nothing about it.
type barrierGroup struct {
	mu      sync.Mutex
	running bool
	next    *barrierCall
	// appends counts barrier appends made, ends the log's ends read
	// instead (EndReader), for tests and benchmarks.
	appends, ends atomic.Uint64
	// off disables coalescing: every read appends its own barrier.
	off atomic.Bool
}

type barrierCall struct {
	// reads is how many reads joined this call (under barrierGroup.mu).
	reads int
	done  chan struct{}
	seq   uint64
	atEnd bool // seq is the log's last sequence, not a barrier's
	err   error
}

// EndReader is a Log that can say where it ends without an append: a
// log of one replica, held by one server, whose last sequence is the
// log's end — every append acknowledged before the question is at or
// below it, and none can be accepted elsewhere. A linearizable read there
// asks it rather than appending a barrier: no append, no fsync, no record
// for every node's applier (DESIGN.md accepts any mechanism that gives the
// seeds' guarantee; the child fleet's linearizability test at one replica
// proves this one under kills and pauses).
type EndReader interface {
	// LastSeq is the log's last sequence as the one server holding it
	// says, with ok; ok is false where the log has more than one replica
	// (no one server's word is its end: append a barrier).
	LastSeq(ctx context.Context) (seq uint64, ok bool, err error)
}

// Barrier appends (or joins) a barrier record on the domain's barrier
// subject and returns its sequence: a position at the log's end as of some
// instant after this call began. On a log that says where it ends
// (EndReader) it appends nothing and returns that end, which a caller
// waiting for the applier to pass it treats the same.
func (r *Replica) Barrier(ctx context.Context) (uint64, error) {
	seq, _, err := r.establishLogEnd(ctx)
	return seq, err
}

// establishLogEnd establishes a position at the log's end as of some instant after
// this call began, coalesced with the reads already waiting: the log's
// last sequence where the log says it (atEnd), else a barrier's.
func (r *Replica) establishLogEnd(ctx context.Context) (seq uint64, atEnd bool, err error) {
	g := &r.barriers
	if g.off.Load() {
		return r.establishEnd(ctx, 1)
	}
	g.mu.Lock()
	if g.next == nil {
		g.next = &barrierCall{done: make(chan struct{})}
	}
	c := g.next
	c.reads++
	if !g.running {
		// No barrier in flight: this read appends its own, on its own
		// goroutine (no other read can join a call once it is taken), and
		// hands whatever gathered meanwhile to a runner. A lone reader
		// pays no goroutine hand-off.
		g.running = true
		g.next = nil
		g.mu.Unlock()
		c.seq, c.atEnd, c.err = r.establishEnd(ctx, 1)
		close(c.done)
		if n := g.handOn(); n != nil {
			go r.runBarriers(n)
		}
		return c.seq, c.atEnd, c.err
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.seq, c.atEnd, c.err
	case <-ctx.Done():
		return 0, false, ctx.Err()
	}
}

// establishEnd asks the log where it ends where it can say, else appends
// a barrier, counted as answering reads.
func (r *Replica) establishEnd(ctx context.Context, reads int) (uint64, bool, error) {
	if er, ok := r.cfg.Log.(EndReader); ok && r.cfg.Publishing {
		seq, known, err := er.LastSeq(ctx)
		if err != nil {
			return 0, false, err
		}
		if known {
			r.barriers.ends.Add(1)
			r.cfg.Metrics.EndRead()
			r.noteLogEnd(seq)
			return seq, true, nil
		}
	}
	seq, err := r.appendBarrier(ctx)
	if err == nil {
		r.cfg.Metrics.BarrierAppended(reads)
	}
	return seq, false, err
}

// runBarriers appends barriers one after another while reads keep joining.
func (r *Replica) runBarriers(c *barrierCall) {
	g := &r.barriers
	for c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.PublishTimeout)
		g.mu.Lock()
		reads := c.reads // no read joins a call once it is taken
		g.mu.Unlock()
		c.seq, c.atEnd, c.err = r.establishEnd(ctx, reads)
		cancel()
		close(c.done)
		c = g.handOn()
	}
}

// handOn takes the call that gathered while a barrier was in flight, or
// says no barrier runs any more.
func (g *barrierGroup) handOn() *barrierCall {
	g.mu.Lock()
	defer g.mu.Unlock()
	c := g.next
	g.next = nil
	if c == nil {
		g.running = false
	}
	return c
}

// appendBarrier appends a barrier on the domain's barrier subject,
// counted as a read's.
func (r *Replica) appendBarrier(ctx context.Context) (uint64, error) {
	seq, err := r.appendBarrierOn(ctx, BarrierSubject(r.domain))
	if err == nil {
		r.barriers.appends.Add(1)
	}
	return seq, err
}

// appendBarrierOn appends a barrier record (version 1 for good: every
// build applies it as nothing) on subject: the reads' barrier subject,
// or a creation mark's (zeromark.go).
func (r *Replica) appendBarrierOn(ctx context.Context, subject string) (uint64, error) {
	if !r.cfg.Publishing {
		return 0, errNotPublishing
	}
	rec := &record.Record{Kind: record.KindBarrier, Version: 1, Writer: r.cfg.Node,
		Generation: r.generation(), Subject: subject}
	if err := rec.Validate(); err != nil {
		return 0, err
	}
	data, err := record.Encode(rec)
	if err != nil {
		return 0, err
	}
	// A barrier is an ordinary append: held to the ordinary ceiling.
	if err := r.room(ctx, storedSize(rec.Subject, "", len(data))); err != nil {
		return 0, err
	}
	ack, err := r.cfg.Log.Publish(ctx, rec.Subject, data, "", nil)
	if err != nil {
		return 0, err
	}
	r.noteLogEnd(ack.Seq)
	return ack.Seq, nil
}

// SetCoalescing turns barrier coalescing on or off (benchmarks compare).
func (r *Replica) SetCoalescing(on bool) { r.barriers.off.Store(!on) }

var errNotPublishing = errors.New("statelog: this node publishes nothing in its current mode")

func (r *Replica) noteLogEnd(seq uint64) {
	for {
		cur := r.logEnd.Load()
		if seq <= cur || r.logEnd.CompareAndSwap(cur, seq) {
			return
		}
	}
}
