package statelog

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Creation marks: how a write at an expectation of zero (a create, whose
// subject holds nothing) on a replicated log finds a stream deleted and
// created again without asking the stream's creation instant first.
//
// The seeds have every such write find a recreated stream "from the
// broker's own creation instant" (checkCreatedBeforeZero). On a
// replicated stream that question is a request answered by the stream's
// leader before every create: at three replicas 165–454 µs of its wait
// and 228–598 µs of the brokers' CPU (BenchmarkZeroCheck). A mark folds it
// into the append. It is a barrier record (version 1, which every build
// applies as nothing) on a subject of this node's own, named by the
// creation instant it was checked under; a write at zero then appends
// held to the mark being the last record on that subject
// (Nats-Expected-Last-Subject-Sequence-Subject) instead of to zero on its
// own subject. A stream created again holds no record on that subject, so
// the broker refuses the append, storing nothing, and the write asks the
// instant as without marks.
//
// A mark is made only between two creation-instant answers that both
// agree with the rows, the second asked after the mark's append was
// acknowledged: so a mark is on the stream the rows are keyed to, and a
// write that rides it, begun after a recreation completed, is refused by
// the broker exactly as the question would have refused it.
//
// Each mark is held by one write at a time (a slot): nats-server's
// clustered leader lets one append expecting a given subject be in
// flight, refusing the others (expectedPerSubjectInProcess), so one mark
// shared by concurrent creates would serialise them (BenchmarkZeroCheck's
// fold=shared: 29–36 refusals a create at 16 writers). A replica keeps up
// to maxMarks; past them, a write at zero asks. A write that takes an
// unmarked slot asks too, and the slot is marked behind it.
//
// What the item's own expectation of zero guarded besides (an op's second
// copy appended after the broker's duplicate window) the ledger guards
// still: a second copy applies nothing. A mark the trim purged, or one
// the log no longer ends its subject with, fails the append the same way;
// the write asks that round and the slot is marked again.

// MarkingLog is a Log whose appends can be held to the last sequence on
// another subject than their own (engine/broker's Log).
type MarkingLog interface {
	// MarksZeroWrites says whether writes at zero ride marks here (a
	// replicated stream, where the creation-instant question is a
	// request to its leader).
	MarksZeroWrites() bool
	// PublishOnMark appends data on subject under msgID, held to markSeq
	// being the last sequence on markSubject. Errors are Publish's: a
	// mark not the last on its subject is a *WrongSequenceError.
	PublishOnMark(ctx context.Context, subject string, data []byte, msgID, markSubject string, markSeq uint64) (PubAck, error)
}

// maxMarks bounds a replica's marks, and so its concurrent writes at zero
// that ride one.
const maxMarks = 64

// markSlot is one mark: its subject and sequence, both unset until the
// slot is marked.
type markSlot struct {
	n       int
	subject string
	seq     uint64
}

// marked reports whether s has a mark a write can ride.
func (s *markSlot) marked() bool { return s != nil && s.seq != 0 }

// zeroMarks is a replica's slots: free ones are taken last-in first-out,
// so the marked ones are reused.
type zeroMarks struct {
	mu      sync.Mutex
	free    []*markSlot
	slots   int
	marking sync.WaitGroup
	closed  bool // the replica is closing: no more marking
	// marked, rode, refused, asked and inFlight count the marks made, the
	// appends that rode one, those the broker refused for it, the writes
	// at zero that asked instead and the markings under way (MarkCounts).
	marked, rode, refused, asked, inFlight atomic.Int64
}

// takeMark takes a slot for a write at zero, and says whether the log
// makes marks at all: the slot is nil where it does not, or where every
// slot is held.
func (r *Replica) takeMark() (*markSlot, bool) {
	ml, ok := r.cfg.Log.(MarkingLog)
	if !ok || !ml.MarksZeroWrites() {
		return nil, false
	}
	m := &r.marks
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := len(m.free); n > 0 {
		s := m.free[n-1]
		m.free = m.free[:n-1]
		return s, true
	}
	if m.slots == maxMarks {
		return nil, true
	}
	m.slots++
	return &markSlot{n: m.slots}, true
}

// putMark gives a write's slot back. An unmarked slot given back by a
// write that landed is marked first, behind it (landed: the log answers,
// so the marking has a chance).
func (r *Replica) putMark(s *markSlot, landed bool) {
	if s == nil {
		return
	}
	m := &r.marks
	m.mu.Lock()
	mark := !s.marked() && landed && !m.closed
	if mark {
		m.marking.Add(1) // under mu, before closeMarks's Wait
		m.inFlight.Add(1)
	}
	m.mu.Unlock()
	if !mark {
		r.freeMark(s)
		return
	}
	go func() {
		defer m.marking.Done()
		r.mark(s)
		r.freeMark(s)
		m.inFlight.Add(-1)
	}()
}

// closeMarks stops the marking (the replica is closing) and waits for
// the markings under way, which the closing cancels.
func (r *Replica) closeMarks() {
	r.marks.mu.Lock()
	r.marks.closed = true
	r.marks.mu.Unlock()
	r.marks.marking.Wait()
}

func (r *Replica) freeMark(s *markSlot) {
	m := &r.marks
	m.mu.Lock()
	m.free = append(m.free, s)
	m.mu.Unlock()
}

// mark makes s's mark, or leaves it unmarked: the creation instant asked
// and compared with the rows' (a recreated stream refuses from then on,
// as a write's check does), the barrier record appended on the slot's
// subject named by that instant, and the instant asked again after the
// append's answer. Only when both answers are the rows' instant is the
// mark kept.
func (r *Replica) mark(s *markSlot) {
	ctx, cancel := context.WithTimeout(context.Background(), r.cfg.PublishTimeout)
	defer cancel()
	go func() {
		select {
		case <-r.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	s.subject, s.seq = "", 0
	keyed, err := r.createdAsKeyed(ctx)
	if err != nil {
		return
	}
	subject := MarkSubject(r.domain, keyed, r.cfg.Node, s.n)
	seq, err := r.appendBarrierOn(ctx, subject)
	if err != nil {
		return
	}
	// Asked again after the mark's answer: the broker's instant must still
	// be the rows' (judgeCreated compares them), and the rows still keyed
	// to the instant the subject names (no reanchor in between).
	if again, err := r.createdAsKeyed(ctx); err != nil || !again.Equal(keyed) {
		return
	}
	s.subject, s.seq = subject, seq
	r.marks.marked.Add(1)
}

// createdAsKeyed is judgeCreated for a mark: the rows' creation instant
// where the broker answered with it, else an error (no mark is made
// from an instant that was not compared).
func (r *Replica) createdAsKeyed(ctx context.Context) (time.Time, error) {
	keyed, answered, err := r.judgeCreated(ctx)
	switch {
	case err != nil:
		return time.Time{}, err
	case !answered:
		return time.Time{}, errors.New("statelog: the broker did not answer the stream's creation instant")
	case keyed.IsZero():
		return time.Time{}, errors.New("statelog: the rows are keyed to no creation instant yet")
	}
	return keyed, nil
}

// markRefused reports whether err is the broker refusing an append held
// to s's mark (the mark not the last on its subject, or another append
// held to it in flight), and if so unmarks s: the write asks this round.
func (r *Replica) markRefused(s *markSlot, err error) bool {
	var wrong *WrongSequenceError
	if !s.marked() || !errors.As(err, &wrong) {
		return false
	}
	s.subject, s.seq = "", 0
	r.marks.refused.Add(1)
	r.marks.mu.Lock()
	defer r.marks.mu.Unlock()
	// A trim passes the oldest marks first, and a recreated stream holds
	// none: the free ones are made again too, each behind a write that asks.
	for _, f := range r.marks.free {
		f.subject, f.seq = "", 0
	}
	return true
}

// MarkCounts are what became of a replica's creation marks.
type MarkCounts struct {
	// Made is how many marks were made; Rode how many appends rode one;
	// Refused how many of those the broker refused for the mark; Asked
	// how many writes at zero asked the creation instant instead; Marking
	// how many markings are under way.
	Made, Rode, Refused, Asked, Marking int64
}

// Marks counts this replica's creation marks.
func (r *Replica) Marks() MarkCounts {
	m := &r.marks
	return MarkCounts{Made: m.marked.Load(), Rode: m.rode.Load(), Refused: m.refused.Load(), Asked: m.asked.Load(), Marking: m.inFlight.Load()}
}

// markToken begins every creation mark's subject after the domain's
// prefix (barrierOnly tells them by it).
const markToken = "mark."

// MarkSubject is the subject of node's n-th creation mark on domain's
// log, under the stream created at keyed: <prefix>mark.<instant>.<node>.<n>.
func MarkSubject(d engine.Domain, keyed time.Time, node string, n int) string {
	return fmt.Sprintf("%s%s%d.%s.%d", SubjectPrefix(d), markToken, keyed.UnixNano(), subjectToken(node), n)
}

// subjectToken is node as one subject token: as it is where it is one,
// else a hash of it.
func subjectToken(node string) string {
	if node != "" && !strings.ContainsAny(node, ". *>\t\r\n") {
		return node
	}
	h := fnv.New64a()
	h.Write([]byte(node))
	return fmt.Sprintf("n%016x", h.Sum64())
}
