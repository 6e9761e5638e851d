package broker

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
)

// subscription feeds the applier from this node's reader, and makes the
// reader again where it goes away under a running node — deleted by an
// operator, or by the broker's own bookkeeping catching up after a
// restart — which would otherwise leave the node applying nothing, its
// writes pending and its linearizable reads refused, for as long as it
// runs.
type subscription struct {
	l    *Log
	c    chan statelog.Delivery
	done chan struct{}
	// gone carries the consume error that says the reader may be gone.
	gone chan error
	// acked is the highest sequence acknowledged (the checkpoint it
	// started at before any): a reader made again starts after it, so it
	// hands over nothing the node has not applied, and whatever it hands
	// over again at or below the checkpoint the applier drops.
	acked atomic.Uint64

	mu sync.Mutex
	cc jetstream.ConsumeContext
	// created is when the reader cc pulls from was made: one of the same
	// name made since is another reader.
	created time.Time
	stopped bool
	once    sync.Once
}

func (s *subscription) C() <-chan statelog.Delivery { return s.c }

func (s *subscription) Done() <-chan struct{} { return s.done }

// consume starts pulling from cons into C.
func (s *subscription) consume(cons jetstream.Consumer) error {
	cc, err := cons.Consume(s.deliver,
		// A short expiry (idle heartbeats at half of it) finds a pull
		// request lost to a broker fault in seconds, not half a minute.
		jetstream.PullMaxMessages(1024), jetstream.PullExpiry(5*time.Second),
		jetstream.ConsumeErrHandler(func(_ jetstream.ConsumeContext, err error) {
			s.l.log.Debug("jetstream_consume_error", engine.LogErr, err.Error())
			if errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrNoHeartbeat) {
				select {
				case s.gone <- err:
				default:
				}
			}
		}))
	if err != nil {
		return fmt.Errorf("broker: consume %s: %w", s.l.name, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		cc.Stop()
		return nil
	}
	if s.cc != nil {
		// The reader it pulled from is gone; what it still hands over
		// is at or below what the new one starts after.
		s.cc.Stop()
	}
	s.cc, s.created = cc, cons.CachedInfo().Created
	return nil
}

func (s *subscription) deliver(m jetstream.Msg) {
	md, err := m.Metadata()
	if err != nil {
		return
	}
	seq := md.Sequence.Stream
	d := statelog.Delivery{
		StoredMsg: statelog.StoredMsg{Seq: seq, Subject: m.Subject(), MsgID: m.Headers().Get(jetstream.MsgIDHeader),
			Data: m.Data(), Time: md.Timestamp},
		Pending: md.NumPending,
		Ack: func() error {
			err := m.Ack()
			if err == nil {
				s.ackedThrough(seq)
			}
			return err
		},
	}
	select {
	case s.c <- d:
	case <-s.done:
		// Stopped and abandoned: the message stays unacknowledged and
		// comes back to the next reader.
	}
}

func (s *subscription) ackedThrough(seq uint64) {
	for {
		old := s.acked.Load()
		if seq <= old || s.acked.CompareAndSwap(old, seq) {
			return
		}
	}
}

// watch makes the reader again whenever the consume says it was deleted,
// or falls silent (a reader deleted while this node was cut off, or
// dropped by a server catching up, never says so) and the broker holds
// no such reader or another one of its name. A deleted reader is made
// again even where the broker holds one of its name by then: the consume
// that was deleted has stopped, and the reader found is judged against
// what was acknowledged, as at boot.
func (s *subscription) watch() {
	for {
		select {
		case <-s.done:
			return
		case err := <-s.gone:
			if errors.Is(err, jetstream.ErrConsumerDeleted) || s.replaced() {
				s.reopen(err)
			}
		}
	}
}

// replaced asks the broker whether the reader this subscription pulls
// from is gone: none of its name, or one made at another instant. An
// answer it cannot give counts as not gone (a silent broker is not a
// deleted reader, and the consume goes on pulling).
func (s *subscription) replaced() bool {
	ctx, cancel := context.WithTimeout(context.Background(), RequestWait)
	defer cancel()
	c, err := s.l.stream.Consumer(ctx, s.l.durable)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true
	}
	if err != nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return !c.CachedInfo().Created.Equal(s.created)
}

// reopen makes the reader again after what was acknowledged, trying until
// it does or the subscription stops.
func (s *subscription) reopen(cause error) {
	for {
		from := s.acked.Load()
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-s.done:
				cancel()
			case <-ctx.Done():
			}
		}()
		cons, err := s.l.reader(ctx, from)
		if err == nil {
			err = s.consume(cons)
		}
		cancel()
		if err == nil {
			s.l.log.Warn(engine.EvReaderReopened, engine.LogDomain, s.l.domainName(), "after", from, "cause", cause.Error())
			return
		}
		s.l.log.Warn(engine.EvReaderReopened, engine.LogDomain, s.l.domainName(), "after", from, "cause", cause.Error(), engine.LogErr, err.Error(),
			"note", "the reader could not be made again yet; this node applies nothing until it is, and tries again in a second")
		select {
		case <-s.done:
			return
		case <-time.After(time.Second):
		}
	}
}

// Stop drains the consumer (messages already pulled are still handed
// over), then closes Done so the applier finishes and exits.
func (s *subscription) Stop() {
	s.once.Do(func() {
		s.mu.Lock()
		s.stopped = true
		cc := s.cc
		s.mu.Unlock()
		cc.Drain()
		select {
		case <-cc.Closed():
		case <-time.After(s.l.drainWait):
			cc.Stop()
		}
		close(s.done)
	})
}
