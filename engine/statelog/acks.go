package statelog

import "time"

// acker spaces the applier's acknowledgements to the broker: at most one
// every `every`, the newest applied delivery's (the consumer acks all
// before it). On a replicated stream each acknowledgement is a proposal
// to the consumer's own raft group on every member, so acking every
// small batch made three more replicated appends per record at three
// nodes (issue 16's R3 write figures). An acknowledgement only tells the
// broker what not to hand out again: the checkpoint, committed with the
// rows, is what this node resumes from, so a later one costs nothing but
// a wider window of redelivery after a crash. The applier flushes it when
// it stops, so a clean restart finds everything it was handed
// acknowledged (seeds: it keeps its consumer as it is).
type acker struct {
	every   time.Duration
	pending func() error
	last    time.Time
	timer   *time.Timer
}

// note takes the newest delivery of a batch just committed: acked now
// when the last acknowledgement is older than every (or every is 0),
// otherwise held for due.
func (a *acker) note(ack func() error) {
	if ack == nil {
		return
	}
	a.pending = ack
	if a.every <= 0 || time.Since(a.last) >= a.every {
		a.flush()
		return
	}
	if a.timer == nil {
		a.timer = time.NewTimer(a.every - time.Since(a.last))
	}
}

// due fires when a held acknowledgement should be sent (nil: none held).
func (a *acker) due() <-chan time.Time {
	if a.timer == nil {
		return nil
	}
	return a.timer.C
}

// flush sends the held acknowledgement, if any.
func (a *acker) flush() {
	if a.timer != nil {
		a.timer.Stop()
		a.timer = nil
	}
	if a.pending == nil {
		return
	}
	_ = a.pending()
	a.pending, a.last = nil, time.Now()
}
