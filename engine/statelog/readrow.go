package statelog

import (
	"context"
	"database/sql"

	"github.com/crewlet/crewlet/engine"
)

// A read that one statement answers needs no transaction: a single SELECT
// is its own snapshot in SQLite, so the BEGIN and ROLLBACK a read
// transaction costs (each a statement the driver prepares afresh, a third
// of a point read) are saved, and the statement runs prepared on any
// connection of the pool.

// RowRead is an object read of one statement. Query's first column is
// the domain's checkpoint (SeenColumn), read in the same statement, so in
// the same snapshot, as the object's rows; Scan scans the row into seen
// (its first destination) and the object's fields.
type RowRead struct {
	Query string
	Args  []any
	Scan  func(row *sql.Row, seen *uint64) error
}

// SeenColumn is the column that reads d's checkpoint sequence, for the
// head of a RowRead's query (a domain's name is a plain word).
func SeenColumn(d engine.Domain) string {
	return `(SELECT seq FROM statelog_checkpoint WHERE domain = '` + string(d) + `')`
}

// ReadObjectRow serves an object read as ReadObject does, admitted the
// same way, answering from one statement where it can — one.Query must be
// a point read, whose work is bounded — where it answers a row and no record is retained undecoded (the counter is raised
// before such a record commits, so it is read after the statement). Any
// other case, an error included, runs slow in a read transaction as
// ReadObject would, and its answer (a refusal saying which, a deferral for
// a retained record covering the object) is the read's.
func (r *Replica) ReadObjectRow(ctx context.Context, opts engine.ReadOptions, one RowRead, slow ObjectReadFunc) (engine.ReadInfo, error) {
	adm, err := r.admit(ctx, opts)
	if err != nil {
		return engine.ReadInfo{}, err
	}
	if r.retained.Load() == 0 && ctx.Err() == nil {
		// The statement is a bounded point read, so it does not watch ctx:
		// watching costs two goroutines per statement (database/sql's and
		// the driver's, each started for a context that can be cancelled),
		// more than the statement itself on a request's context.
		// Where the applier stood before the statement: past its
		// checkpoint only by barriers passed without a transaction, which
		// change no row (see readAdmitted).
		passed := r.Applied()
		var seen uint64
		err := one.Scan(r.stmts.QueryRowContext(context.WithoutCancel(ctx), one.Query, one.Args...), &seen)
		seen = max(seen, passed, adm.Through)
		if err == nil && r.retained.Load() == 0 {
			info := engine.ReadInfo{Level: adm.Level, SeenThrough: r.Position(seen), Complete: true}
			r.lagInto(&info, seen)
			return info, nil
		}
	}
	return r.readAdmitted(ctx, adm, slow, true)
}
