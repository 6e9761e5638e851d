package statelogtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine/statelog"
)

// Options shape a Stream. Zero values take the shipped logs' settings.
type Options struct {
	// Name is the stream's name (default CREWLET_TEST_LOG).
	Name string
	// Start is the clock's first instant (default 2026-01-01T00:00:00Z).
	Start time.Time
	// DuplicateWindow is how long a Nats-Msg-Id collapses a repeated
	// append onto its first copy (default 2 minutes, every shipped log's).
	DuplicateWindow time.Duration
	// AckWait is how long a reader's delivery may go unacknowledged before
	// the consumer hands it over again (default 30 s, the durable's).
	AckWait time.Duration
	// DedupFirst answers a repeated Nats-Msg-Id as a duplicate before the
	// expected last subject sequence is checked, as a replicated (R3)
	// stream does. Unset, the expectation is checked first, as a single
	// server or an R1 stream does: a retry that carries a stale
	// expectation is refused wrong-sequence although its first copy is
	// there (research/stack.md, "retry after a lost ack").
	DedupFirst bool
}

// Stream is one domain's stream held in memory and shared by every node
// of a test; Log hands each node its view. Its clock is the test's: it
// dates messages, runs the duplicate window and the ack wait, and
// implements engine.Clock so replicas can share it.
type Stream struct {
	mu      sync.Mutex
	opts    Options
	now     time.Time
	created time.Time
	msgs    []statelog.StoredMsg // msgs[i] is sequence i+1
	bytes   uint64
	lastOn  map[string]uint64
	dedup   map[string]dedupEntry

	pubFaults  []pubFault
	readFaults []readFault
	attempts   []Attempt
	readers    map[string]*reader
	events     []string
}

type dedupEntry struct {
	seq uint64
	at  time.Time
}

// NewStream returns an empty stream.
func NewStream(o Options) *Stream {
	if o.Name == "" {
		o.Name = "CREWLET_TEST_LOG"
	}
	if o.Start.IsZero() {
		o.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if o.DuplicateWindow == 0 {
		o.DuplicateWindow = 2 * time.Minute
	}
	if o.AckWait == 0 {
		o.AckWait = 30 * time.Second
	}
	return &Stream{opts: o, now: o.Start, created: o.Start, lastOn: map[string]uint64{},
		dedup: map[string]dedupEntry{}, readers: map[string]*reader{}}
}

// Name is the stream's name.
func (s *Stream) Name() string { return s.opts.Name }

// Now is the stream's clock.
func (s *Stream) Now() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now
}

// Advance moves the clock by d. Every open, unheld reader is then handed
// again what it was given at least the ack wait ago and never acknowledged
// (a delivery lost in flight included), oldest first: the consumer's
// redelivery, which is how an older record comes after newer ones.
func (s *Stream) Advance(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.now = s.now.Add(d)
	for _, r := range s.sortedReaders() {
		if r.sub == nil || r.held {
			continue
		}
		var due []uint64
		for seq, at := range r.pending {
			if !s.now.Before(at.Add(s.opts.AckWait)) {
				due = append(due, seq)
			}
		}
		slices.Sort(due)
		for _, seq := range due {
			if !s.pushLocked(r, seq) {
				break
			}
			r.pending[seq] = s.now
			s.eventf("%s: %d redelivered (ack wait)", r.node, seq)
		}
	}
}

// Log is node's view of the stream: what it publishes is attributed to it
// and its Subscribe opens node's durable reader.
func (s *Stream) Log(node string) statelog.Log { return &nodeLog{s: s, node: node} }

// Attempt is one append as the stream saw it.
type Attempt struct {
	N       int
	Node    string
	Subject string
	MsgID   string
	Expect  *uint64
	// Outcome is ok, duplicate, wrong_last or failed; Seq is where the
	// message landed (a duplicate's first copy), Last the subject's last
	// sequence a wrong_last named.
	Outcome string
	Seq     uint64
	Last    uint64
	// AckLost says the publisher was told nothing of the outcome.
	AckLost bool
}

// Attempts lists every append so far, in order.
func (s *Stream) Attempts() []Attempt {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.attempts)
}

// Messages lists every stored message in sequence order.
func (s *Stream) Messages() []statelog.StoredMsg {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.msgs)
}

// TakeEvents returns what the readers did since the last call (deliveries
// lost in flight, redeliveries, readers rebuilt) and forgets it.
func (s *Stream) TakeEvents() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.events
	s.events = nil
	return out
}

func (s *Stream) eventf(format string, args ...any) {
	s.events = append(s.events, fmt.Sprintf(format, args...))
}

// Match selects the appends a fault applies to; nil selects every one.
type Match func(subject, msgID string) bool

type pubFault struct {
	match   Match
	loseAck bool  // the append lands, its answer is lost
	err     error // nothing lands, the publisher gets err
	racer   Racer
}

// Racer is another writer's append that lands on the same subject while
// an answer is being lost: its data and msg id, given the subject.
type Racer func(subject string) (data []byte, msgID string)

// LoseAck makes the next append m selects land as usual while its
// publisher is told statelog.ErrNoAnswer: the acknowledgement is lost.
// With racers, their appends land on the same subject right behind it,
// before the publisher can look at the log.
func (s *Stream) LoseAck(m Match, racers ...Racer) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range racers {
		s.pubFaults = append(s.pubFaults, pubFault{match: m, loseAck: true, racer: r})
	}
	if len(racers) == 0 {
		s.pubFaults = append(s.pubFaults, pubFault{match: m, loseAck: true})
	}
}

// FailPublish makes the next append m selects store nothing and answer
// err (statelog.ErrNoAnswer when nil: a broker that never answered).
func (s *Stream) FailPublish(m Match, err error) {
	if err == nil {
		err = fmt.Errorf("%w: the append never reached the stream (statelogtest)", statelog.ErrNoAnswer)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pubFaults = append(s.pubFaults, pubFault{match: m, err: err})
}

func (s *Stream) takePubFault(subject, msgID string) *pubFault {
	for i, f := range s.pubFaults {
		if f.match == nil || f.match(subject, msgID) {
			s.pubFaults = slices.Delete(s.pubFaults, i, i+1)
			return &f
		}
	}
	return nil
}

// ReadOp names a read of the stream a fault can fail.
type ReadOp string

// The stream's reads.
const (
	ReadLast ReadOp = "last" // LastOnSubject
	ReadGet  ReadOp = "get"  // Get
	ReadInfo ReadOp = "info" // Info
)

type readFault struct {
	op  ReadOp
	err error
}

// FailRead makes the next read op answer err (statelog.ErrNoAnswer when nil).
func (s *Stream) FailRead(op ReadOp, err error) {
	if err == nil {
		err = fmt.Errorf("%w: the read was not answered (statelogtest)", statelog.ErrNoAnswer)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readFaults = append(s.readFaults, readFault{op: op, err: err})
}

func (s *Stream) readFault(op ReadOp) error {
	for i, f := range s.readFaults {
		if f.op == op {
			s.readFaults = slices.Delete(s.readFaults, i, i+1)
			return f.err
		}
	}
	return nil
}

func (s *Stream) publish(ctx context.Context, node, subject string, data []byte, msgID string, expectLast *uint64) (statelog.PubAck, error) {
	if err := ctx.Err(); err != nil {
		return statelog.PubAck{}, fmt.Errorf("%w: %v", statelog.ErrNoAnswer, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	a := Attempt{N: len(s.attempts) + 1, Node: node, Subject: subject, MsgID: msgID}
	if expectLast != nil {
		e := *expectLast
		a.Expect = &e
	}
	f := s.takePubFault(subject, msgID)
	if f != nil && !f.loseAck {
		a.Outcome = "failed"
		s.attempts = append(s.attempts, a)
		return statelog.PubAck{}, f.err
	}
	ack, err := s.appendLocked(subject, data, msgID, expectLast, &a)
	if f != nil {
		// The stream did what it did; the answer never came back.
		a.AckLost = true
		ack, err = statelog.PubAck{}, fmt.Errorf("%w: the answer to the append was lost (statelogtest)", statelog.ErrNoAnswer)
	}
	s.attempts = append(s.attempts, a)
	if f != nil && f.racer != nil {
		rdata, rid := f.racer(subject)
		r := Attempt{N: len(s.attempts) + 1, Node: "racer", Subject: subject, MsgID: rid}
		_, _ = s.appendLocked(subject, rdata, rid, nil, &r)
		s.attempts = append(s.attempts, r)
	}
	return ack, err
}

// appendLocked is the broker's decision on one append, in the order the
// stream's topology takes it (Options.DedupFirst).
func (s *Stream) appendLocked(subject string, data []byte, msgID string, expectLast *uint64, a *Attempt) (statelog.PubAck, error) {
	duplicate := func() (statelog.PubAck, bool) {
		if msgID == "" {
			return statelog.PubAck{}, false
		}
		e, ok := s.dedup[msgID]
		if !ok {
			return statelog.PubAck{}, false
		}
		if s.now.Sub(e.at) >= s.opts.DuplicateWindow {
			delete(s.dedup, msgID) // the window passed: the id is forgotten
			return statelog.PubAck{}, false
		}
		a.Outcome, a.Seq = "duplicate", e.seq
		return statelog.PubAck{Seq: e.seq, Duplicate: true}, true
	}
	wrong := func() error {
		if expectLast == nil {
			return nil
		}
		if last := s.lastOn[subject]; last != *expectLast {
			a.Outcome, a.Last = "wrong_last", last
			return &statelog.WrongSequenceError{Last: last}
		}
		return nil
	}
	if s.opts.DedupFirst {
		if ack, ok := duplicate(); ok {
			return ack, nil
		}
		if err := wrong(); err != nil {
			return statelog.PubAck{}, err
		}
	} else {
		if err := wrong(); err != nil {
			return statelog.PubAck{}, err
		}
		if ack, ok := duplicate(); ok {
			return ack, nil
		}
	}
	seq := uint64(len(s.msgs)) + 1
	s.msgs = append(s.msgs, statelog.StoredMsg{Seq: seq, Subject: subject, MsgID: msgID, Data: slices.Clone(data), Time: s.now})
	s.bytes += uint64(len(subject) + len(msgID) + len(data))
	s.lastOn[subject] = seq
	if msgID != "" {
		s.dedup[msgID] = dedupEntry{seq: seq, at: s.now}
	}
	a.Outcome, a.Seq = "ok", seq
	s.pumpLocked()
	return statelog.PubAck{Seq: seq}, nil
}

func (s *Stream) lastSeq() uint64 { return uint64(len(s.msgs)) }

func (s *Stream) lastOnSubject(subject string) (statelog.StoredMsg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readFault(ReadLast); err != nil {
		return statelog.StoredMsg{}, err
	}
	seq, ok := s.lastOn[subject]
	if !ok {
		return statelog.StoredMsg{}, statelog.ErrNoMessage
	}
	return s.msgs[seq-1], nil
}

func (s *Stream) get(seq uint64) (statelog.StoredMsg, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readFault(ReadGet); err != nil {
		return statelog.StoredMsg{}, err
	}
	if seq == 0 || seq > s.lastSeq() {
		return statelog.StoredMsg{}, statelog.ErrNoMessage
	}
	return s.msgs[seq-1], nil
}

func (s *Stream) info() (statelog.LogInfo, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readFault(ReadInfo); err != nil {
		return statelog.LogInfo{}, err
	}
	info := statelog.LogInfo{LastSeq: s.lastSeq(), Bytes: s.bytes, Created: s.created}
	if info.LastSeq > 0 {
		info.FirstSeq = 1
	}
	return info, nil
}

// nodeLog is one node's statelog.Log over the shared stream.
type nodeLog struct {
	s    *Stream
	node string
}

var _ statelog.Log = (*nodeLog)(nil)

func (l *nodeLog) Stream() string { return l.s.opts.Name }

func (l *nodeLog) Publish(ctx context.Context, subject string, data []byte, msgID string, expectLast *uint64) (statelog.PubAck, error) {
	return l.s.publish(ctx, l.node, subject, data, msgID, expectLast)
}

func (l *nodeLog) LastOnSubject(_ context.Context, subject string) (statelog.StoredMsg, error) {
	return l.s.lastOnSubject(subject)
}

func (l *nodeLog) Get(_ context.Context, seq uint64) (statelog.StoredMsg, error) { return l.s.get(seq) }

func (l *nodeLog) Info(context.Context) (statelog.LogInfo, error) { return l.s.info() }

func (l *nodeLog) Subscribe(_ context.Context, checkpoint uint64) (statelog.Subscription, error) {
	return l.s.subscribe(l.node, checkpoint)
}

var errNoReader = errors.New("statelogtest: the node has no reader open")
