package statelogtest

import (
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine/statelog"
)

// readerBuffer is how many deliveries a reader's channel holds, as
// engine/broker's does.
const readerBuffer = 4096

// reader is one node's durable consumer: ack-all, in stream order, handing
// over again after the ack wait what it was never told was applied. Its
// fault plan (held, drops, lost acks) is the test's and outlives a rebuild.
type reader struct {
	node string
	// exists says the consumer was made on the stream; gen counts its
	// rebuilds, so an ack from a reader that was deleted is refused.
	exists bool
	gen    int
	// delivered is the highest sequence handed over (the next is
	// delivered+1); ackFloor the highest acknowledged; pending what was
	// handed over (or lost on the way) and not acknowledged, with when.
	delivered uint64
	ackFloor  uint64
	pending   map[uint64]time.Time

	held     bool
	acksLost bool
	drops    map[uint64]bool

	sub *subscription
}

func (s *Stream) reader(node string) *reader {
	r := s.readers[node]
	if r == nil {
		r = &reader{node: node, pending: map[uint64]time.Time{}, drops: map[uint64]bool{}}
		s.readers[node] = r
	}
	return r
}

func (s *Stream) sortedReaders() []*reader {
	names := make([]string, 0, len(s.readers))
	for n := range s.readers {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]*reader, len(names))
	for i, n := range names {
		out[i] = s.readers[n]
	}
	return out
}

// drift names how a reader disagrees with the rows it is opened for, as
// engine/broker names it.
func drift(r *reader, checkpoint uint64) string {
	switch {
	case r.ackFloor > checkpoint:
		return "acknowledged_past_checkpoint"
	case r.delivered > checkpoint:
		return "delivered_past_checkpoint"
	case len(r.pending) > 0:
		return "in_flight_for_a_gone_reader"
	case r.delivered < checkpoint:
		return "behind_checkpoint"
	}
	return ""
}

func (s *Stream) subscribe(node string, checkpoint uint64) (statelog.Subscription, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reader(node)
	if r.sub != nil {
		return nil, fmt.Errorf("statelogtest: %s already has a reader open on %s", node, s.opts.Name)
	}
	if !r.exists {
		r.exists = true
		r.delivered, r.ackFloor = checkpoint, checkpoint
	} else if d := drift(r, checkpoint); d != "" {
		// The checkpoint, never the reader, is where a node resumes.
		s.eventf("%s: reader rebuilt at %d (%s: delivered %d, ack floor %d, %d pending)", node, checkpoint, d, r.delivered, r.ackFloor, len(r.pending))
		r.gen++
		r.delivered, r.ackFloor = checkpoint, checkpoint
		clear(r.pending)
	}
	sub := &subscription{s: s, r: r, c: make(chan statelog.Delivery, readerBuffer), done: make(chan struct{})}
	r.sub = sub
	s.pumpLocked()
	return sub, nil
}

// pumpLocked hands every open, unheld reader what the stream holds past
// its delivered sequence.
func (s *Stream) pumpLocked() {
	for _, r := range s.sortedReaders() {
		if r.held {
			continue
		}
		for s.deliverNextLocked(r) {
		}
	}
}

// deliverNextLocked hands r the next sequence, or loses it in flight
// where the test dropped it; false when there is nothing to hand or no
// room.
func (s *Stream) deliverNextLocked(r *reader) bool {
	if r.sub == nil || r.delivered >= s.lastSeq() || len(r.sub.c) == cap(r.sub.c) {
		return false
	}
	seq := r.delivered + 1
	r.delivered = seq
	r.pending[seq] = s.now
	if r.drops[seq] {
		// Counted delivered by the consumer, never seen by the node: only
		// an ack wait (or a rebuilt reader) brings it back, and an ack of
		// anything after it acknowledges it too.
		delete(r.drops, seq)
		s.eventf("%s: %d lost in flight", r.node, seq)
		return true
	}
	s.pushLocked(r, seq)
	return true
}

// pushLocked puts the message at seq in r's channel.
func (s *Stream) pushLocked(r *reader, seq uint64) bool {
	sub := r.sub
	if sub == nil || len(sub.c) == cap(sub.c) {
		return false
	}
	m := s.msgs[seq-1]
	m.Data = slices.Clone(m.Data)
	sub.pushed++
	sub.c <- statelog.Delivery{StoredMsg: m, Pending: s.lastSeq() - r.delivered, Ack: s.ackFunc(r, sub, r.gen, sub.pushed, seq)}
	sub.unacked = append(sub.unacked, handed{n: sub.pushed, seq: seq})
	return true
}

// ackFunc acknowledges seq and everything before it (ack-all). The n-th
// delivery of sub being acknowledged also says the replica has taken and
// committed every delivery before it in the channel, whatever their
// sequences.
func (s *Stream) ackFunc(r *reader, sub *subscription, gen int, n int, seq uint64) func() error {
	return func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		sub.unacked = slices.DeleteFunc(sub.unacked, func(h handed) bool { return h.n <= n || h.seq <= seq })
		if gen != r.gen {
			return fmt.Errorf("statelogtest: %s's reader was rebuilt since %d was delivered", r.node, seq)
		}
		if r.acksLost {
			return nil // sent, never arrived: the consumer still waits for it
		}
		r.ackFloor = max(r.ackFloor, seq)
		for p := range r.pending {
			if p <= seq {
				delete(r.pending, p)
			}
		}
		return nil
	}
}

// subscription is a reader opened by a replica.
type subscription struct {
	s    *Stream
	r    *reader
	c    chan statelog.Delivery
	done chan struct{}
	once sync.Once
	// unacked is what was put in c and no ack call has covered since:
	// empty means the replica has committed and acknowledged all of it (a
	// delivery at or below an acknowledged sequence is covered however it
	// lies in the channel: applying it again changes nothing).
	unacked []handed
	pushed  int
}

// handed is one delivery put in a reader's channel: the n-th, of seq.
type handed struct {
	n   int
	seq uint64
}

func (s *subscription) C() <-chan statelog.Delivery { return s.c }

func (s *subscription) Done() <-chan struct{} { return s.done }

// Stop ends deliveries; what is already in the channel stays there for
// the applier to finish, as engine/broker's drain does.
func (s *subscription) Stop() {
	s.once.Do(func() {
		s.s.mu.Lock()
		if s.r.sub == s {
			s.r.sub = nil
		}
		s.s.mu.Unlock()
		close(s.done)
	})
}

// Hold stops node's reader handing anything over (a reader cut off from
// its broker, or just slow); Deliver and Redeliver still hand over what
// the test names.
func (s *Stream) Hold(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reader(node).held = true
}

// Release lets node's reader hand over everything it holds back.
func (s *Stream) Release(node string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reader(node).held = false
	s.pumpLocked()
}

// Deliver hands node's open reader its next n messages, held or not, and
// says how many it handed (a dropped one counts: it was sent).
func (s *Stream) Deliver(node string, n int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reader(node)
	if r.sub == nil {
		return 0, errNoReader
	}
	done := 0
	for done < n && s.deliverNextLocked(r) {
		done++
	}
	return done, nil
}

// Drop loses the delivery of seq to node in flight when it is next handed
// over: the consumer counts it delivered and the node never sees it.
func (s *Stream) Drop(node string, seq uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reader(node)
	if r.exists && seq <= r.delivered {
		return fmt.Errorf("statelogtest: %d was already delivered to %s", seq, node)
	}
	r.drops[seq] = true
	return nil
}

// Redeliver hands node's open reader the stored messages from..to again,
// in that order, whatever it acknowledged: a consumer rebuilt lower, or a
// redelivery racing its ack.
func (s *Stream) Redeliver(node string, from, to uint64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reader(node)
	if r.sub == nil {
		return errNoReader
	}
	for seq := from; seq <= to && seq <= s.lastSeq(); seq++ {
		if seq == 0 {
			continue
		}
		if !s.pushLocked(r, seq) {
			return fmt.Errorf("statelogtest: %s's channel is full", node)
		}
		if seq > r.ackFloor {
			r.pending[seq] = s.now
		}
	}
	return nil
}

// LoseReaderAcks makes node's acknowledgements vanish on their way (lost
// true) or arrive again (false).
func (s *Stream) LoseReaderAcks(node string, lost bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reader(node).acksLost = lost
}

// Idle reports whether node's replica has acknowledged everything its
// reader put in its channel (a node with no reader open is idle): its
// applier has committed all of it.
func (s *Stream) Idle(node string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.readers[node]
	return r == nil || r.sub == nil || len(r.sub.unacked) == 0
}

// ReaderState is a reader as the broker's consumer info shows it.
type ReaderState struct {
	Exists, Open, Held, AcksLost bool
	Delivered, AckFloor          uint64
	// AckPending lists what was handed over (or lost on the way) and not
	// acknowledged; Backlog counts what was not handed over yet.
	AckPending []uint64
	Backlog    uint64
}

// Reader returns node's reader state.
func (s *Stream) Reader(node string) ReaderState {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reader(node)
	st := ReaderState{Exists: r.exists, Open: r.sub != nil, Held: r.held, AcksLost: r.acksLost, Delivered: r.delivered, AckFloor: r.ackFloor}
	for p := range r.pending {
		st.AckPending = append(st.AckPending, p)
	}
	slices.Sort(st.AckPending)
	if r.exists {
		st.Backlog = s.lastSeq() - r.delivered
	}
	return st
}
