package peerbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// SQLFloorTarget names the same job's SQL alone (SQLFloor).
const SQLFloorTarget = "sql_floor"

// SQLFloor is the same job's SQL alone: for each same-job workload, the
// very statements the bench sends rqlite (samejob.go), run on this
// build's SQLite (modernc.org/sqlite, opened as a node opens its
// database) inside the bench's own process. No HTTP, no consensus, no log,
// no JSON: its CPU per operation is the floor this build's driver sets
// under the workload. Where it comes near rqlite's whole request, a
// Crewlet that keeps the job's promises on this driver cannot spend less
// than rqlite whatever it does above the SQL. It is one copy's SQL, so it
// runs beside a single node only (the bench leaves it out at --replicas
// above one).
type SQLFloor struct {
	// Dir holds the database.
	Dir string

	db       *sql.DB
	versions [Workers]int64
	ops      atomic.Uint64
	plan     Plan
	bulkMu   sync.Mutex
	flips    int
}

// Name is "sql_floor".
func (f *SQLFloor) Name() string { return SQLFloorTarget }

// Supports the same-job workloads.
func (f *SQLFloor) Supports(k Kind) bool {
	return k == Create || k == Update || k == Get || k == Search || k == Bulk
}

// ServerCPU is this process's CPU: the SQL runs in it, and nothing else of
// the bench's does while it is measured (the targets take turns).
func (f *SQLFloor) ServerCPU() (time.Duration, error) { return processesCPU([]int{os.Getpid()}) }

// Setup files what rqlite's set-up files (fileSameJob) on its own
// database.
func (f *SQLFloor) Setup(ctx context.Context, p Plan) error {
	f.plan = p
	if err := os.MkdirAll(f.Dir, 0o755); err != nil {
		return err
	}
	db, err := sqlite.Open(filepath.Join(f.Dir, "samejob.db"), 30)
	if err != nil {
		return err
	}
	f.db = db
	f.versions, err = fileSameJob(ctx, f, p)
	return err
}

// txnOf runs stmts as one write transaction (sameJobFiler).
func (f *SQLFloor) txnOf(ctx context.Context, stmts []stmt) error {
	_, err := f.txn(ctx, stmts)
	return err
}

// scalar reads one number (sameJobFiler); 0 where there is no row, as
// rqlite's answers it.
func (f *SQLFloor) scalar(ctx context.Context, q string, args ...any) (int64, error) {
	var v sql.NullInt64
	err := f.db.QueryRowContext(ctx, q, args...).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return v.Int64, err
}

// Do runs one operation: what Rqlite.Do sends, run here.
func (f *SQLFloor) Do(ctx context.Context, w Workload, worker, i int) error {
	at := time.Now().UnixMilli()
	switch w.Kind {
	case Create:
		title, desc := corpusText(worker*1_000_003 + i)
		_, err := f.txn(ctx, createTxn(f.opID(), "CR", title, desc, assignee(i), at))
		return err
	case Update:
		// Each worker updates its own item, as on rqlite: no other
		// worker moves its version.
		k := worker % Workers
		title, _ := corpusText(worker*1_000_003 + i)
		res, err := f.txn(ctx, updateTxn(f.opID(), fmt.Sprintf("UP-%d", k+1), f.versions[k], title, at))
		if err != nil {
			return err
		}
		if res[updateApplied] != 1 {
			return fmt.Errorf("update of UP-%d at version %d: stale", k+1, f.versions[k])
		}
		f.versions[k]++
		return nil
	case Get:
		return f.query(ctx, getQueries(fmt.Sprintf("GT-%d", worker%Workers+1))...)
	case Search:
		return f.query(ctx, searchQuery(searchTerms(worker*1_000_003+i), 10))
	case Bulk:
		return f.bulk(ctx, at)
	}
	return fmt.Errorf("the SQL floor has no workload %s", w.Kind)
}

func (f *SQLFloor) bulk(ctx context.Context, at int64) error {
	f.bulkMu.Lock()
	defer f.bulkMu.Unlock()
	from, to := bulkStatuses(f.flips)
	res, err := f.txn(ctx, bulkTxn(f.opID(), corpusProject(0), from, to, at))
	if err != nil {
		return err
	}
	if res[2] != int64(f.plan.BulkItems) {
		return fmt.Errorf("bulk update changed %d items, want %d", res[2], f.plan.BulkItems)
	}
	f.flips++
	return nil
}

func (f *SQLFloor) opID() string { return fmt.Sprintf("sql-%d", f.ops.Add(1)) }

// txn runs stmts in one write transaction (BEGIN IMMEDIATE, as every
// write of a node) and returns each one's rows affected.
func (f *SQLFloor) txn(ctx context.Context, stmts []stmt) ([]int64, error) {
	tx, err := sqlite.BeginWrite(ctx, f.db)
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
	out := make([]int64, 0, len(stmts))
	for _, s := range stmts {
		res, err := tx.ExecContext(ctx, s.sqlOf(), s.argsOf()...)
		if err != nil {
			return nil, fmt.Errorf("%.60s: %w", s.sqlOf(), err)
		}
		n, _ := res.RowsAffected()
		out = append(out, n)
	}
	return out, tx.Commit()
}

// query runs stmts as one read, in one transaction as rqlite's request
// does, reading every row.
func (f *SQLFloor) query(ctx context.Context, stmts ...stmt) error {
	tx, err := f.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, s := range stmts {
		if err := readAll(tx.QueryContext(ctx, s.sqlOf(), s.argsOf()...)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// readAll scans every row of rs.
func readAll(rs *sql.Rows, err error) error {
	if err != nil {
		return err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return err
	}
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rs.Next() {
		if err := rs.Scan(ptrs...); err != nil {
			return err
		}
	}
	return rs.Err()
}

// Close closes the database.
func (f *SQLFloor) Close() {
	if f.db != nil {
		f.db.Close()
	}
}
