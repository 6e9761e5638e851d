package ledger

import (
	"context"
	"database/sql"
	"errors"
	"strings"
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
	digest     TEXT NOT NULL DEFAULT '',
	applied_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS statelog_ledger_applied ON statelog_ledger(applied_at);
CREATE TABLE IF NOT EXISTS statelog_ledger_watermark (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	watermark INTEGER NOT NULL,
	swept_at  INTEGER NOT NULL,
	deleted   INTEGER NOT NULL
);
`

// Entry is one ledger row: an operation this node applied, and where.
type Entry struct {
	OpID       string
	Domain     string
	Subject    string
	Object     string
	Generation uint64
	Seq        uint64
	// Digest is the argument digest the operation's record carried: an id
	// brought back with other arguments is another write.
	Digest    string
	AppliedAt time.Time
}

// Querier is what Lookup reads through: a *sql.Tx or *sql.DB.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Execer is what Record writes through: a *sql.Tx, or one whose
// statements are prepared once per connection.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Record writes the row for an operation inside the transaction that
// applies it, and reports whether it is the first: a second copy of the
// same op (a redelivery, or an append the duplicate window missed) keeps
// the first row (the first copy's position is the answer for ever), and
// is applied nowhere. One statement both asks and writes, so the applier
// records an operation before applying it; a transaction that fails
// takes the row back with the rows it covers.
func Record(ctx context.Context, tx Execer, e Entry) (first bool, _ error) {
	res, err := tx.ExecContext(ctx, `INSERT INTO statelog_ledger(op_id, domain, subject, object, generation, seq, digest, applied_at)
		VALUES(?,?,?,?,?,?,?,?) ON CONFLICT(op_id) DO NOTHING`,
		e.OpID, e.Domain, e.Subject, e.Object, e.Generation, e.Seq, e.Digest, e.AppliedAt.UnixMilli())
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// Lookup returns the row of an operation, ok false when the ledger holds none.
func Lookup(ctx context.Context, q Querier, opID string) (Entry, bool, error) {
	var e Entry
	var at int64
	err := q.QueryRowContext(ctx, `SELECT op_id, domain, subject, object, generation, seq, digest, applied_at FROM statelog_ledger WHERE op_id = ?`, opID).
		Scan(&e.OpID, &e.Domain, &e.Subject, &e.Object, &e.Generation, &e.Seq, &e.Digest, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	e.AppliedAt = time.UnixMilli(at)
	return e, true, nil
}

// Retention is how long a ledger row is kept after its apply: sized for
// the slowest real retrier, a scheduled seat carrying an id across a long
// weekend.
const Retention = 30 * 24 * time.Hour

// Sweep deletes the rows applied more than Retention before now and, when
// it deleted any, moves the watermark to that cutoff: an operation minted
// before the watermark may have lost its row. It runs in its own write
// transaction; the number of rows deleted is returned.
func Sweep(ctx context.Context, db *sql.DB, now time.Time) (int64, error) {
	cutoff := now.Add(-Retention).UnixMilli()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `DELETE FROM statelog_ledger WHERE applied_at < ?`, cutoff)
	if err != nil {
		return 0, err
	}
	n, _ := res.RowsAffected()
	if n > 0 {
		if _, err := tx.ExecContext(ctx, `INSERT INTO statelog_ledger_watermark(id, watermark, swept_at, deleted) VALUES(1, ?, ?, ?)
			ON CONFLICT(id) DO UPDATE SET watermark = max(watermark, excluded.watermark), swept_at = excluded.swept_at, deleted = deleted + excluded.deleted`,
			cutoff, now.UnixMilli(), n); err != nil {
			return 0, err
		}
	}
	return n, tx.Commit()
}

// Watermark is how far back this node's ledger may have lost rows; ok is
// false while it never lost one.
func Watermark(ctx context.Context, q Querier) (time.Time, bool, error) {
	var ms int64
	err := q.QueryRowContext(ctx, `SELECT watermark FROM statelog_ledger_watermark WHERE id = 1`).Scan(&ms)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	return time.UnixMilli(ms), true, nil
}

// Vouches reports whether this node's ledger can answer for op: it lost
// no row the op's own could be among. An id the engine did not mint
// carries no instant and is older than everything the ledger ever lost.
func Vouches(op OpID, watermark time.Time, lost bool) bool {
	if !lost {
		return true
	}
	if !op.EngineMinted() {
		return false
	}
	return !op.Minted.Before(watermark)
}

// LookupKey returns the row of any operation whose id starts with this
// UUID: a client-minted key names one write, whatever name it came with.
func LookupKey(ctx context.Context, q Querier, key string) (Entry, bool, error) {
	var e Entry
	var at int64
	err := q.QueryRowContext(ctx, `SELECT op_id, domain, subject, object, generation, seq, digest, applied_at FROM statelog_ledger
		WHERE op_id >= ? AND op_id < ? ORDER BY seq LIMIT 1`, key+".", key+"/").
		Scan(&e.OpID, &e.Domain, &e.Subject, &e.Object, &e.Generation, &e.Seq, &e.Digest, &at)
	if errors.Is(err, sql.ErrNoRows) {
		return Entry{}, false, nil
	}
	if err != nil {
		return Entry{}, false, err
	}
	e.AppliedAt = time.UnixMilli(at)
	return e, true, nil
}

// RowsByDomain counts the ledger's rows of each of
// domains, in one pass over the table: the ledger has no index by domain
// (nothing else reads it so: a metrics scrape does), so a count for each domain read the whole
// table once a domain, and a GROUP BY sorts it (BenchmarkRowsByDomain). A
// failed read counts none.
func RowsByDomain(ctx context.Context, db *sql.DB, domains []string) map[string]int64 {
	out := make(map[string]int64, len(domains))
	if len(domains) == 0 {
		return out
	}
	cols := make([]string, len(domains))
	args := make([]any, len(domains))
	counts := make([]any, len(domains))
	vals := make([]int64, len(domains))
	for i, d := range domains {
		cols[i], args[i], counts[i] = `count(*) FILTER (WHERE domain = ?)`, d, &vals[i]
	}
	if err := db.QueryRowContext(ctx, `SELECT `+strings.Join(cols, ", ")+` FROM statelog_ledger`, args...).Scan(counts...); err != nil {
		return out
	}
	for i, d := range domains {
		out[d] = vals[i]
	}
	return out
}
