package broker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/statelog"
)

// The combiner's sizes. Under sync always a broker fsyncs every single
// append, while an atomic batch costs a fixed handful of fsyncs whatever
// its size (BATCHING.md measured four at R1): a batch of two is slower
// than two single appends, and batches pay from about four on.
const (
	// combineAt is how many appends must be under way on one log before
	// the next one is queued for a batch rather than sent alone at once.
	combineAt = 16
	// batchMin is the fewest queued appends sent as one batch; fewer are
	// sent alone, side by side.
	batchMin = 4
	// maxBatch stays under nats-server's max_batch_size (1 000).
	maxBatch = 512
	// batchAnswerWait bounds a batch's commit when no member's context
	// has a deadline.
	batchAnswerWait = 30 * time.Second
	// holdMax bounds how long a queue too short to batch is held for an
	// append under way to finish.
	holdMax = 2 * time.Millisecond
)

// combiner is a group commit for one log's appends. While fewer than
// combineAt appends are under way each goes out alone at once, as it
// would without a combiner. Past that, appends queue, and one batch is in
// flight at a time: the appends queued when it went out, as one
// nats-server atomic batch. Those that arrive meanwhile wait and go out
// together next, so under load they share a batch's fsyncs. A queue too
// short to batch waits a little while appends sent alone are still under
// way (hold), for the ones behind it to join.
// Each record keeps its own op id (Nats-Msg-Id) and expected last subject
// sequence, so a batch the broker takes stores exactly what the same
// appends sent alone would have. A batch is all or nothing: when the
// broker refuses it (one record stale, one a duplicate, a ceiling),
// every member is sent again alone, so each gets its own exact answer.
type combiner struct {
	nc     *nats.Conn
	stream string
	// active counts the appends inside Log.Publish on this log.
	active atomic.Int64
	// The batches the broker took, refused and left unanswered, and the
	// records in those it took (for tests and benches).
	batches, refused, lost, records atomic.Int64

	// left is kicked whenever an append leaves Log.Publish: a flusher
	// holding a short queue looks at it again.
	left chan struct{}

	mu      sync.Mutex
	queue   []*queuedAppend
	running bool // a flusher is draining the queue
}

// BatchRecord is one record of an atomic batch: its subject, its data,
// its op id (Nats-Msg-Id, none when empty) and the expected last sequence
// of its subject (none when nil).
type BatchRecord struct {
	Subject    string
	Data       []byte
	MsgID      string
	ExpectLast *uint64
}

// queuedAppend is one append waiting for a send.
type queuedAppend struct {
	BatchRecord
	deadline time.Time
	taken    bool // put in a send (guarded by the combiner's mu)
	done     chan combined
}

// combined is a queued append's answer. alone says the caller sends the
// append alone: too few were queued to batch, or its batch was refused.
type combined struct {
	ack   statelog.PubAck
	err   error
	alone bool
}

func newCombiner(nc *nats.Conn, stream string) *combiner {
	return &combiner{nc: nc, stream: stream, left: make(chan struct{}, 1)}
}

// enter counts an append under way and says whether it should be queued
// for a batch; leave must follow.
func (c *combiner) enter() bool { return c.active.Add(1) >= combineAt }

func (c *combiner) leave() {
	c.active.Add(-1)
	select {
	case c.left <- struct{}{}:
	default:
	}
}

// append queues one record for the next send and waits for its answer.
func (c *combiner) append(ctx context.Context, subject string, data []byte, msgID string, expectLast *uint64) combined {
	q := &queuedAppend{BatchRecord: BatchRecord{Subject: subject, Data: data, MsgID: msgID, ExpectLast: expectLast}, done: make(chan combined, 1)}
	q.deadline, _ = ctx.Deadline()
	c.mu.Lock()
	c.queue = append(c.queue, q)
	if !c.running {
		c.running = true
		go c.flush()
	}
	c.mu.Unlock()
	select {
	case res := <-q.done:
		return res
	case <-ctx.Done():
	}
	c.mu.Lock()
	if !q.taken {
		c.drop(q)
	}
	c.mu.Unlock()
	select {
	case res := <-q.done: // answered meanwhile
		return res
	default:
	}
	// Unsent, nothing can land; in a batch on the wire, it may yet. Either
	// way the answer is what a single append's is when its context ends
	// first: unknown, settled from the log.
	return combined{err: classify(ctx.Err())}
}

// drop takes q out of the queue; the caller holds mu.
func (c *combiner) drop(q *queuedAppend) {
	for i, x := range c.queue {
		if x == q {
			c.queue = append(c.queue[:i], c.queue[i+1:]...)
			return
		}
	}
}

// flush sends what is queued, one send at a time, until the queue is
// empty.
func (c *combiner) flush() {
	var held time.Time
	for {
		c.mu.Lock()
		if c.hold(&held) {
			c.mu.Unlock()
			select {
			case <-c.left:
			case <-time.After(time.Until(held.Add(holdMax))):
			}
			continue
		}
		batch := c.take()
		if len(batch) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		if len(batch) < batchMin {
			c.alone(batch)
			continue
		}
		c.send(batch)
	}
}

// hold says whether a queue too short to batch waits for more, rather
// than going out alone at once: while other appends are under way on the
// log (sent alone, each taking one fsync of the broker's in turn), for at
// most holdMax since it began to wait (held). Sent alone at once, such a
// queue kept the appends arriving behind it going out one by one: at 64
// writers on one node nearly every append was a single, and the log took
// one fsync per record. Held, the appends that arrive while those under
// way finish join it, and the next send is a batch. The caller holds mu.
func (c *combiner) hold(held *time.Time) bool {
	n := len(c.queue)
	if n == 0 || n >= batchMin || c.active.Load() <= int64(n) {
		*held = time.Time{}
		return false
	}
	if held.IsZero() {
		*held = time.Now()
	}
	if time.Since(*held) >= holdMax {
		*held = time.Time{} // let go: the next short queue waits afresh
		return false
	}
	return true
}

// alone hands every member back to be sent alone.
func (c *combiner) alone(batch []*queuedAppend) {
	for _, q := range batch {
		q.done <- combined{alone: true}
	}
}

// take removes up to maxBatch queued appends on distinct subjects (the
// broker refuses a batch naming a subject twice with expectations); the
// others wait for the next send. The caller holds mu.
func (c *combiner) take() []*queuedAppend {
	var batch, rest []*queuedAppend
	seen := map[string]bool{}
	for _, q := range c.queue {
		if len(batch) == maxBatch || seen[q.Subject] {
			rest = append(rest, q)
			continue
		}
		seen[q.Subject] = true
		q.taken = true
		batch = append(batch, q)
	}
	c.queue = rest
	return batch
}

// send publishes batch as one atomic batch and answers every member.
func (c *combiner) send(batch []*queuedAppend) {
	recs := make([]BatchRecord, len(batch))
	for i, q := range batch {
		recs[i] = q.BatchRecord
	}
	seqs, err := PublishBatch(c.nc, c.stream, recs, wait(batch))
	var refused *BatchRefusedError
	if errors.As(err, &refused) {
		c.refused.Add(1)
		c.alone(batch)
		return
	}
	if err != nil {
		c.lost.Add(1)
	}
	for i, q := range batch {
		switch {
		case err != nil:
			q.done <- combined{err: err}
		default:
			q.done <- combined{ack: statelog.PubAck{Seq: seqs[i]}}
		}
	}
	if err == nil {
		c.batches.Add(1)
		c.records.Add(int64(len(batch)))
	}
}

// wait is how long the batch's commit may take: the latest member's
// deadline (a member whose own deadline passes first stops waiting on its
// own), so one member that queued long does not cut the others' wait.
func wait(batch []*queuedAppend) time.Duration {
	var d time.Duration
	for _, q := range batch {
		if q.deadline.IsZero() {
			return batchAnswerWait
		}
		d = max(d, time.Until(q.deadline))
	}
	return max(d, time.Millisecond)
}

// BatchRefusedError is the broker refusing an atomic batch as a whole:
// nothing of it was stored.
type BatchRefusedError struct {
	Code        int
	Description string
}

func (e *BatchRefusedError) Error() string {
	return fmt.Sprintf("broker: atomic batch refused: %d %s", e.Code, e.Description)
}

// batchAck is the broker's answer to a batch's commit.
type batchAck struct {
	Seq   uint64 `json:"seq"`
	Count uint64 `json:"count"`
	Error *struct {
		ErrCode     int    `json:"err_code"`
		Description string `json:"description"`
	} `json:"error"`
}

// PublishBatch sends recs to stream as one atomic batch: every message
// but the last without a reply (the broker stages it), the last with
// Nats-Batch-Commit as a request, answered within wait with the batch's
// last sequence and its count. The records land at consecutive sequences
// in order; the sequences are returned. An error is a *BatchRefusedError
// (nothing stored) or, when the answer was lost, the framework's
// ErrNoAnswer (the batch may have landed whole or not at all).
func PublishBatch(nc *nats.Conn, stream string, recs []BatchRecord, wait time.Duration) ([]uint64, error) {
	id := nats.NewInbox() // unique, under the 64-character limit
	for i, r := range recs {
		m := nats.NewMsg(r.Subject)
		m.Data = r.Data
		m.Header.Set("Nats-Batch-Id", id)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(i+1))
		if r.MsgID != "" {
			m.Header.Set(jetstream.MsgIDHeader, r.MsgID)
		}
		if r.ExpectLast != nil {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(*r.ExpectLast, 10))
		}
		m.Header.Set(jetstream.ExpectedStreamHeader, stream)
		if i < len(recs)-1 {
			if err := nc.PublishMsg(m); err != nil {
				// The batch never commits: the broker abandons what it
				// staged. Said as a lost answer, which the write path
				// settles from the log.
				return nil, classify(err)
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		resp, err := nc.RequestMsg(m, wait)
		if err != nil {
			return nil, classify(err)
		}
		return batchSequences(resp.Data, len(recs))
	}
	return nil, nil
}

// batchSequences reads a batch commit's answer: each record's sequence.
func batchSequences(answer []byte, n int) ([]uint64, error) {
	var ack batchAck
	if err := json.Unmarshal(answer, &ack); err != nil {
		return nil, fmt.Errorf("%w: batch answer %q: %v", statelog.ErrNoAnswer, answer, err)
	}
	if ack.Error != nil {
		return nil, &BatchRefusedError{Code: ack.Error.ErrCode, Description: ack.Error.Description}
	}
	if ack.Count != uint64(n) || ack.Seq < ack.Count {
		return nil, fmt.Errorf("%w: a batch of %d answered with count %d at %d", statelog.ErrNoAnswer, n, ack.Count, ack.Seq)
	}
	seqs := make([]uint64, n)
	for k := range seqs {
		seqs[k] = ack.Seq - ack.Count + 1 + uint64(k)
	}
	return seqs, nil
}
