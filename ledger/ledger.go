package ledger

import (
	"context"
	"database/sql"
	"errors"
	"time"
)

// Schema creates the ledger's table. It lives in the replicated database,
// written only inside apply transactions.
const Schema = `
CREATE TABLE IF NOT EXISTS statelog_ledger (
	op_id      TEXT PRIMARY KEY,
	domain     TEXT NOT NULL,
	subject    TEXT NOT NULL,
	object     TEXT NOT NULL,
	generation INTEGER NOT NULL,
	seq        INTEGER NOT NULL,
	applied_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS statelog_ledger_applied ON statelog_ledger(applied_at);
`

// Entry is one ledger row: an operation this node applied, and where.
type Entry struct {
	OpID       string
	Domain     string
	Subject    string
	Object     string
	Generation uint64
	Seq        uint64
	AppliedAt  time.Time
}

// Querier is what Lookup reads through: a *sql.Tx or *sql.DB.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Record writes the row for an applied operation inside the apply
// transaction. A second copy of the same op (a redelivery, or an append the
// duplicate window missed) keeps the first row: the first copy's position
// is the answer for ever.
func Record(ctx context.Context, tx *sql.Tx, e Entry) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO statelog_ledger(op_id, domain, subject, object, generation, seq, applied_at)
		VALUES(?,?,?,?,?,?,?) ON CONFLICT(op_id) DO NOTHING`,
		e.OpID, e.Domain, e.Subject, e.Object, e.Generation, e.Seq, e.AppliedAt.UnixMilli())
	return err
}

// Lookup returns the row of an operation, ok false when the ledger holds none.
func Lookup(ctx context.Context, q Querier, opID string) (Entry, bool, error) {
	var e Entry
	var at int64
	err := q.QueryRowContext(ctx, `SELECT op_id, domain, subject, object, generation, seq, applied_at FROM statelog_ledger WHERE op_id = ?`, opID).
		Scan(&e.OpID, &e.Domain, &e.Subject, &e.Object, &e.Generation, &e.Seq, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	e.AppliedAt = time.UnixMilli(at)
	return e, true, nil
}
