package statelog

import (
	"context"
	"sync/atomic"
	"time"
)

// Every apply transaction writes the checkpoint, the anchors it moves and
// the index pages its records share once, however many records it
// carries, and each commit writes its pages to the WAL. At 64 writers on
// a three-node fleet the applier found 3 to 5 records waiting per
// transaction: three nodes' commits and their WAL pages, on one machine,
// were a large part of a write's cost.
//
// So a small batch waits a little for the records this node's own
// appends are about to bring: while any of its write appends is under
// way, a batch of fewer than gatherBelow records, none of them a barrier,
// gathers what arrives for at most gatherFor, and goes once it reaches
// gatherBelow, once no append of this node is under way any more (a lone
// writer's record goes as soon as its own append has its answer), or
// once a barrier arrives (a linearizable read waits on it). A node with
// no write under way (a reader, or one applying other nodes' writes
// only) never waits. The writes whose records wait answer up to
// gatherFor later; the combiner's hold (broker) makes the same trade.
const (
	gatherFor   = time.Millisecond
	gatherBelow = 16
)

// appendsUnderWay counts this node's write appends sent to the log and
// not yet answered, and tells the applier when none is left.
type appendsUnderWay struct {
	n atomic.Int64
	// none is kicked when n falls to zero; a kick may be stale, so its
	// reader looks at n again.
	none chan struct{}
}

func newAppendsUnderWay() appendsUnderWay {
	return appendsUnderWay{none: make(chan struct{}, 1)}
}

func (a *appendsUnderWay) begin() { a.n.Add(1) }

func (a *appendsUnderWay) end() {
	if a.n.Add(-1) == 0 {
		select {
		case a.none <- struct{}{}:
		default:
		}
	}
}

// gatherer is the applier's wait for more records; only the applier's
// goroutine uses it.
type gatherer struct {
	// wait is gatherFor (a test sets another).
	wait  time.Duration
	timer *time.Timer
	// waits counts the batches that waited, for tests.
	waits atomic.Uint64
}

// gather lets a small batch wait for the records this node's appends
// under way are about to bring (see gatherFor), then takes whatever else
// has arrived, up to maxBatch.
func (r *Replica) gather(ctx context.Context, batch []Delivery, c <-chan Delivery) []Delivery {
	if len(batch) == 0 || len(batch) >= gatherBelow || r.appends.n.Load() == 0 {
		return batch
	}
	barrier := BarrierSubject(r.domain)
	for _, d := range batch {
		if d.Subject == barrier {
			return batch
		}
	}
	g := &r.gatherer
	g.waits.Add(1)
	if g.wait == 0 {
		g.wait = gatherFor
	}
	if g.timer == nil {
		g.timer = time.NewTimer(g.wait)
	} else {
		g.timer.Reset(g.wait)
	}
	defer g.timer.Stop()
	for len(batch) < gatherBelow {
		select {
		case d := <-c:
			batch = append(batch, d)
			if d.Subject == barrier {
				return fill(batch, c)
			}
		case <-r.appends.none:
			if r.appends.n.Load() == 0 {
				return fill(batch, c)
			}
		case <-g.timer.C:
			return fill(batch, c)
		case <-ctx.Done():
			return batch
		}
	}
	return fill(batch, c)
}

// fill takes what has already arrived, up to maxBatch, without waiting.
func fill(batch []Delivery, c <-chan Delivery) []Delivery {
	for len(batch) < maxBatch {
		select {
		case d := <-c:
			batch = append(batch, d)
		default:
			return batch
		}
	}
	return batch
}
