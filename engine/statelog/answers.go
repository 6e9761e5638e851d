package statelog

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"

	"github.com/crewlet/crewlet/engine/record"
)

// Answerer is a Domain that reads, inside the apply transaction, what a
// write of this node answers with (the object its record made, as the
// rows stand right after the record): the writer then answers from it
// rather than from a read transaction of its own.
//
// Such a read starts cold: SQLite drops a connection's page cache and
// file map whenever another connection has written since its last read,
// and under writes another one always has, so every page the read touches
// is mapped and parsed again. That was the costliest part of a write's
// answer (readItemByID: 14% of a node's CPU at 64 writers over the
// operator MCP, 13% of a three-node fleet's). The applier's connection
// made those changes itself and finds the pages it just wrote in its
// cache.
type Answerer interface {
	// Answer reads rec's answer inside tx, after rec's apply: nil where
	// rec's kind answers with nothing. An error costs the writer nothing
	// but its own read.
	Answer(ctx context.Context, tx *sql.Tx, rec *record.Record, at Applying) (any, error)
}

// answerRows holds the answers the applier read for the writes this node
// has under way: a write registers its op id before it appends (await),
// the applier reads the answer of a record carrying an awaited op id,
// kept once its transaction commits, and the write takes it with its
// outcome. Nothing is read for another node's record or for a write that
// stopped waiting.
type answerRows struct {
	mu   sync.Mutex
	wait map[string]*answerSlot
	// batch is what the transaction in progress read; the applier's
	// goroutine alone touches it.
	batch []answerRow
	// taken counts the answers writes took.
	taken atomic.Uint64
}

// answerSlot is one awaited op id: refs counts the writes under way with
// it (a retry may run beside its first attempt), v the answer read at seq.
type answerSlot struct {
	refs int
	seq  uint64
	v    any
}

type answerRow struct {
	opID string
	seq  uint64
	v    any
}

// await registers a write under way with opID; done must follow.
func (a *answerRows) await(opID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.wait == nil {
		a.wait = map[string]*answerSlot{}
	}
	s := a.wait[opID]
	if s == nil {
		s = &answerSlot{}
		a.wait[opID] = s
	}
	s.refs++
}

// done ends a write's wait for opID.
func (a *answerRows) done(opID string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.wait[opID]; s != nil {
		if s.refs--; s.refs <= 0 {
			delete(a.wait, opID)
		}
	}
}

// awaited says whether a write under way waits for opID's answer.
func (a *answerRows) awaited(opID string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.wait[opID] != nil
}

// note keeps an answer the transaction in progress read.
func (a *answerRows) note(opID string, seq uint64, v any) {
	a.batch = append(a.batch, answerRow{opID, seq, v})
}

// reset forgets what an earlier try of the batch read.
func (a *answerRows) reset() { a.batch = a.batch[:0] }

// commit hands the committed transaction's answers to their writes.
func (a *answerRows) commit() {
	if len(a.batch) == 0 {
		return
	}
	a.mu.Lock()
	for _, r := range a.batch {
		if s := a.wait[r.opID]; s != nil {
			s.seq, s.v = r.seq, r.v
		}
	}
	a.mu.Unlock()
	a.batch = a.batch[:0]
}

// take returns the answer read for opID's record at seq, nil when none was.
func (a *answerRows) take(opID string, seq uint64) any {
	a.mu.Lock()
	defer a.mu.Unlock()
	if s := a.wait[opID]; s != nil && s.seq == seq && s.v != nil {
		a.taken.Add(1)
		return s.v
	}
	return nil
}
