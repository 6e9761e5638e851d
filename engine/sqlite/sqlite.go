// Package sqlite opens the replicated database and runs statements on it:
// the modernc driver, WAL, every write transaction BEGIN IMMEDIATE (so no
// commit elsewhere can abort an apply between its read and its write),
// read transactions deferred, and hot statements prepared once per
// connection without ever waiting for a second connection while holding one;
// a Checkpointer copies the WAL back into the database off the commit path;
// multi-row statements are cut into chunks of a few lengths (ChunkLen,
// Chunks) and spelled with Placeholders and Tuples.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" driver

	"github.com/crewlet/crewlet/engine"
)

// FileName is the replicated database's name inside the data directory.
const FileName = "crewlet-replicated.db"

// PoolSize is how many connections a database keeps open at most.
const PoolSize = 8

// Open opens (creating when missing) the database at path. busyTimeout is
// store.busy_timeout_seconds: how long a writer waits for the lock.
func Open(path string, busyTimeoutSeconds int) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	// SQLite creates a database 0644 less the umask, and its -wal with
	// the database's own mode: created owner-only here first, both are,
	// whatever the process's umask. An empty file is an empty database.
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = f.Close()
	}
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return nil, fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutSeconds*1000))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	// The inline checkpoint's threshold: a backstop where a Checkpointer
	// runs (checkpoint.go), SQLite's own checkpointing where none does.
	q.Add("_pragma", fmt.Sprintf("wal_autocheckpoint(%d)", walBackstopPages))
	// Reads map the file instead of copying each page through a pread
	// into a 2 MB per-connection cache: a ranked search at 100 000 items
	// touches far more pages than that, and the copies were a fifth of its
	// CPU (syscalls). Past the mapped size SQLite reads as before.
	q.Add("_pragma", fmt.Sprintf("mmap_size(%d)", MmapBytes))
	q.Set("_txlock", "immediate")
	// unix-excl: the process holds the database file exclusively and
	// keeps the WAL index in its own memory rather than in a -shm file
	// every connection maps. Each transaction's locks on that index are
	// then a mutex rather than an fcntl call: two system calls a read
	// (taking a read mark and letting it go), which were an eighth of
	// the CPU of 64 coalesced linearizable readers. No other process may open
	// the database while a node has it, which the data directory's lock
	// already says; this process's connections share the index as ever.
	q.Set("vfs", "unix-excl")
	db, err := sql.Open("sqlite", "file:"+abs+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(PoolSize)
	db.SetMaxIdleConns(PoolSize)
	var mode string
	if err := db.QueryRow("PRAGMA journal_mode").Scan(&mode); err != nil {
		db.Close()
		return nil, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	if mode != "wal" {
		db.Close()
		return nil, fmt.Errorf("sqlite: %s is in journal mode %q, not wal", path, mode)
	}
	return db, nil
}

// BeginWrite opens a write transaction: BEGIN IMMEDIATE, the lock taken
// when it begins rather than at its first write. A writer that does not
// reach the front of the line within store.busy_timeout_seconds fails
// retryably and rejoins it (logged store_tx_retry, naming the knob): a
// boot or an apply behind a long transaction waits its turn rather than
// failing, and the line still drains in order.
func BeginWrite(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		// The transaction is its owner's to end (every caller rolls back
		// what it does not commit), not ctx's: a write transaction bound
		// to a context that can end costs a goroutine for it and one more
		// for every result set read inside it (see point). Its statements
		// still stop when their own contexts end.
		tx, err := db.BeginTx(point(ctx), nil)
		if err == nil || !IsBusy(err) || ctx.Err() != nil {
			return tx, err
		}
		loggerOf(db).Warn(engine.EvStoreTxRetry, "knob", "store.busy_timeout_seconds", "attempt", attempt, engine.LogErr, err.Error(),
			"hint", "a writer waited out the busy timeout behind other writers' transactions; on a node doing bulk work, raise store.busy_timeout_seconds")
	}
}

// IsBusy reports whether err is SQLite's SQLITE_BUSY: the lock was not
// had within the busy timeout.
func IsBusy(err error) bool {
	var coded interface{ Code() int }
	if errors.As(err, &coded) {
		return coded.Code()&0xff == 5 // SQLITE_BUSY and its extended codes
	}
	return err != nil && strings.Contains(err.Error(), "SQLITE_BUSY")
}

// loggers are where each open database's store_tx_retry lines go.
var loggers sync.Map

// SetLogger names where db's store lines go (component store); nil
// forgets db, as its owner does when it closes it.
func SetLogger(db *sql.DB, l *slog.Logger) {
	if l == nil {
		loggers.Delete(db)
		return
	}
	loggers.Store(db, l.With(engine.LogComponent, engine.ComponentStore))
}

func loggerOf(db *sql.DB) *slog.Logger {
	if l, ok := loggers.Load(db); ok {
		return l.(*slog.Logger)
	}
	return slog.New(slog.DiscardHandler)
}

// MmapBytes is how much of the database file each connection maps.
const MmapBytes = 1 << 30

// BeginRead opens a read transaction: a deferred BEGIN, one consistent
// snapshot, which never takes the write lock.
func BeginRead(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	return db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// Statements prepares hot statements once per connection instead of
// parsing them on every call (the parser was a quarter of a read's CPU).
type Statements struct {
	db      *sql.DB
	mu      sync.Mutex
	m       map[string]*sql.Stmt
	filling map[string]bool
}

// NewStatements returns an empty cache over db.
func NewStatements(db *sql.DB) *Statements {
	return &Statements{db: db, m: map[string]*sql.Stmt{}, filling: map[string]bool{}}
}

// In returns query prepared for use inside tx. A query the cache does not
// hold yet is prepared on tx's own connection for this use, and on the
// pool in the background for the next. Preparing on the pool here would
// wait for a free connection while holding one (tx's): with every
// connection of the pool held by such a caller, none would come free and
// the node would hang until each caller's deadline.
func (s *Statements) In(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := s.get(query); ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// QueryRowContext runs a one-row query on the pool, outside any
// transaction, through the cached statement; until the background prepare
// has landed it runs unprepared. It makes the cache a ledger.Querier.
func (s *Statements) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if st, ok := s.get(query); ok {
		return st.QueryRowContext(ctx, args...)
	}
	return s.db.QueryRowContext(ctx, query, args...)
}

// get returns query's cached statement, starting its background prepare
// when there is none.
func (s *Statements) get(query string) (*sql.Stmt, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.m[query]
	if !ok && !s.filling[query] {
		s.filling[query] = true
		go s.fill(query)
	}
	return st, ok
}

// fill prepares query on the pool, holding nothing while it waits for a
// connection; a failure (a closed database, a bad query) leaves the query
// to be tried again by its next use.
func (s *Statements) fill(query string) {
	st, err := s.db.PrepareContext(context.Background(), query)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.filling, query)
	if err == nil {
		s.m[query] = st
	}
}

// Cached says whether query's statement is in the cache.
func (s *Statements) Cached(query string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.m[query]
	return ok
}

// Cached runs statements inside Tx through the cache S (none when S is
// nil); a statement that cannot be prepared runs unprepared, so its error
// is the statement's own. B, where it is Tx's, keeps each statement once
// bound to Tx for the rest of the transaction.
type Cached struct {
	Tx *sql.Tx
	S  *Statements
	B  *Bound
}

// Bound holds the statements a cache has bound to one transaction. An
// apply transaction runs the same few texts for every record it holds;
// binding a pool statement to the transaction again each time (database/sql
// looks up the connection's copy under two locks and registers a new
// wrapper) was a tenth of a drained create's apply.
type Bound struct {
	tx *sql.Tx
	m  map[string]*sql.Stmt
}

// NewBound returns an empty Bound for tx; its statements close with tx.
// A Bound is used by one goroutine, the one running tx.
func NewBound(tx *sql.Tx) *Bound { return &Bound{tx: tx, m: map[string]*sql.Stmt{}} }

// stmt is query's statement inside the transaction, nil where there is
// no cache or it cannot be prepared (the caller then runs it unprepared).
func (c Cached) stmt(ctx context.Context, query string) *sql.Stmt {
	if c.S == nil {
		return nil
	}
	bound := c.B != nil && c.B.tx == c.Tx
	if bound {
		if st, ok := c.B.m[query]; ok {
			return st
		}
	}
	st, err := c.S.In(ctx, c.Tx, query)
	if err != nil {
		return nil
	}
	if bound {
		c.B.m[query] = st // prepared on the transaction or bound to it: good until it ends
	}
	return st
}

// ExecContext runs query in the transaction.
func (c Cached) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ctx = point(ctx)
	if st := c.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.Tx.ExecContext(ctx, query, args...)
}

// QueryRowContext runs a one-row query in the transaction.
func (c Cached) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	if ctx.Err() != nil {
		return c.Tx.QueryRowContext(ctx, query, args...) // answers the context's error
	}
	ctx = point(ctx)
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.Tx.QueryRowContext(ctx, query, args...)
}

// point is ctx without its cancellation, for a statement of a handful of
// page reads or writes (Cached's Exec and QueryRow): checked before it
// starts, never interrupted once it runs. Given a context that can end,
// the driver watches it for the statement's span from a goroutine of its
// own (and database/sql another for each result set); under load those
// were most of the Go scheduler's run queue (90 runnable at 64 writers on
// three nodes), and the goroutines reading the broker's acknowledgements
// waited behind them. A statement that can run long (a search, a list)
// keeps its context (QueryContext), and so does a read transaction, whose
// wait for a connection the caller's deadline bounds (BeginRead). A
// write transaction does not (BeginWrite): it is checked before each
// try, and its wait for the lock is bounded by the busy timeout.
func point(ctx context.Context) context.Context { return context.WithoutCancel(ctx) }

// QueryContext runs a query of many rows in the transaction.
func (c Cached) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.Tx.QueryContext(ctx, query, args...)
}
