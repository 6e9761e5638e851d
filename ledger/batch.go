package ledger

import (
	"context"
	"database/sql"
	"strings"
)

// A batch of many operations asks the ledger once and writes it once,
// where Record would ask and write once an operation: Known says which of
// the batch's ids the ledger holds already, the applier decides each
// operation's first copy from that and from what the batch itself
// recorded, and RecordAll writes the new rows in the same transaction,
// before it commits. A multi-row statement is cheaper by the row than one
// statement a row: through database/sql and the driver, a statement costs
// more than the rows it writes. Callers cut long runs into chunks of a
// few fixed lengths, so each statement text is prepared once.

// RowQuerier is what Known reads through: a transaction, or one whose
// statements are prepared once per connection.
type RowQuerier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// Known adds to held the ids the ledger holds, read inside the
// transaction that will record the others.
func Known(ctx context.Context, q RowQuerier, ids []string, held map[string]bool) error {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := q.QueryContext(ctx, `SELECT op_id FROM statelog_ledger WHERE op_id IN (`+list(len(ids), "?")+`)`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		held[id] = true
	}
	return rows.Err()
}

// RecordAll writes the rows of operations whose first copy the caller
// decided from Known. Unlike Record it does not take a row that is there
// already quietly: such a row means Known was asked outside the
// transaction, and the statement's failure takes the whole transaction
// back rather than apply an operation twice.
func RecordAll(ctx context.Context, tx Execer, entries []Entry) error {
	args := make([]any, 0, 8*len(entries))
	for _, e := range entries {
		args = append(args, e.OpID, e.Domain, e.Subject, e.Object, e.Generation, e.Seq, e.Digest, e.AppliedAt.UnixMilli())
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO statelog_ledger(op_id, domain, subject, object, generation, seq, digest, applied_at) VALUES `+
		list(len(entries), "("+list(8, "?")+")"), args...)
	return err
}

// list is n comma-separated copies of one: "?,?,?", "(?,?),(?,?)". It is
// sqlite.Placeholders and sqlite.Tuples again, in one line: the ledger
// stands on the engine vocabulary alone (internal/hygiene's import rule).
func list(n int, one string) string {
	return strings.TrimSuffix(strings.Repeat(one+",", n), ",")
}
