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
	// appends counts barrier appends made, for tests and benchmarks.
	appends atomic.Uint64
	// off disables coalescing: every read appends its own barrier.
	off atomic.Bool
}

type barrierCall struct {
	// reads is how many reads joined this call (under barrierGroup.mu).
	reads int
	done  chan struct{}
	seq   uint64
	err   error
}

// Barrier appends (or joins) a barrier record on the domain's barrier
// subject and returns its sequence: a position at the log's end as of some
// instant after this call began.
func (r *Replica) Barrier(ctx context.Context) (uint64, error) {
	g := &r.barriers
	if g.off.Load() {
		seq, err := r.appendBarrier(ctx)
		if err == nil {
			r.cfg.Metrics.BarrierAppended(1)
		}
		return seq, err
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
		c.seq, c.err = r.appendBarrier(ctx)
		if c.err == nil {
			r.cfg.Metrics.BarrierAppended(1)
		}
		close(c.done)
		if n := g.handOn(); n != nil {
			go r.runBarriers(n)
		}
		return c.seq, c.err
	}
	g.mu.Unlock()
	select {
	case <-c.done:
		return c.seq, c.err
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// runBarriers appends barriers one after another while reads keep joining.
func (r *Replica) runBarriers(c *barrierCall) {
	g := &r.barriers
	for c != nil {
		ctx, cancel := context.WithTimeout(context.Background(), r.cfg.PublishTimeout)
		c.seq, c.err = r.appendBarrier(ctx)
		cancel()
		g.mu.Lock()
		reads := c.reads
		g.mu.Unlock()
		if c.err == nil {
			r.cfg.Metrics.BarrierAppended(reads)
		}
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

func (r *Replica) appendBarrier(ctx context.Context) (uint64, error) {
	if !r.cfg.Publishing {
		return 0, errNotPublishing
	}
	rec := &record.Record{Kind: record.KindBarrier, Version: 1, Writer: r.cfg.Node,
		Generation: r.generation(), Subject: BarrierSubject(r.domain)}
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
	r.barriers.appends.Add(1)
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
