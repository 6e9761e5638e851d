package statelog

import (
	"context"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/ledger"
)

// ledgerBatchFrom is how many operations a batch carries before it asks
// the ledger about them all at once: below it, one statement an
// operation (ledger.Record) is fewer statements than a query and an
// insert for the batch.
const ledgerBatchFrom = 4

// batchLedger decides, for a batch of many operations, which copy of each
// is its first with one query (ledger.Known) and writes their rows with
// one insert at the batch's end (ledger.RecordAll), in place of a
// statement an operation: the ledger insert was the framework's costliest
// statement of a drained create. Only the applier's goroutine uses it.
type batchLedger struct {
	// asked is the op ids Known was asked about; held, those the ledger
	// holds or this batch recorded (a second copy in the same batch is
	// not the first either).
	asked, held map[string]bool
	pending     []ledger.Entry
}

// reset forgets an earlier try of the batch: what it noted never
// committed.
func (b *batchLedger) reset() {
	clear(b.asked)
	clear(b.held)
	b.pending = b.pending[:0]
}

// ask looks up at once the operations of the deliveries past seq, named
// by their broker message ids (a write's op id). An id that differs from
// its record's op id costs nothing but the batching: first then asks
// the ledger for that operation on its own.
func (b *batchLedger) ask(ctx context.Context, q sqlite.Cached, batch []Delivery, past uint64) error {
	var ids []string
	for _, d := range batch {
		if d.Seq > past && d.MsgID != "" {
			ids = append(ids, d.MsgID)
		}
	}
	if len(ids) < ledgerBatchFrom {
		return nil
	}
	if b.asked == nil {
		b.asked, b.held = map[string]bool{}, map[string]bool{}
	}
	if err := sqlite.Chunks(ids, func(chunk []string) error { return ledger.Known(ctx, q, chunk, b.held) }); err != nil {
		return err
	}
	for _, id := range ids {
		b.asked[id] = true
	}
	return nil
}

// first reports whether e is the first copy of its operation, and notes
// its row: kept for flush where the batch asked about it, written now
// otherwise.
func (b *batchLedger) first(ctx context.Context, q sqlite.Cached, e ledger.Entry) (bool, error) {
	if !b.asked[e.OpID] {
		return ledger.Record(ctx, q, e)
	}
	if b.held[e.OpID] {
		return false, nil
	}
	b.held[e.OpID] = true
	b.pending = append(b.pending, e)
	return true, nil
}

// flush writes the rows kept, in the batch's transaction.
func (b *batchLedger) flush(ctx context.Context, q sqlite.Cached) error {
	err := sqlite.Chunks(b.pending, func(chunk []ledger.Entry) error { return ledger.RecordAll(ctx, q, chunk) })
	b.pending = b.pending[:0]
	return err
}
