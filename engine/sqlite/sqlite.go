// Package sqlite opens the replicated database: the modernc driver, WAL,
// every write transaction BEGIN IMMEDIATE (so no commit elsewhere can abort
// an apply between its read and its write), read transactions deferred.
package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"path/filepath"
	"sync"

	_ "modernc.org/sqlite" // the "sqlite" driver
)

// FileName is the replicated database's name inside the data directory.
const FileName = "crewlet-replicated.db"

// Open opens (creating when missing) the database at path. busyTimeout is
// store.busy_timeout_seconds: how long a writer waits for the lock.
func Open(path string, busyTimeoutSeconds int) (*sql.DB, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", busyTimeoutSeconds*1000))
	q.Add("_pragma", "journal_mode(WAL)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Set("_txlock", "immediate")
	db, err := sql.Open("sqlite", "file:"+abs+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
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
// when it begins rather than at its first write.
func BeginWrite(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	return db.BeginTx(ctx, nil)
}

// BeginRead opens a read transaction: a deferred BEGIN, one consistent
// snapshot, which never takes the write lock.
func BeginRead(ctx context.Context, db *sql.DB) (*sql.Tx, error) {
	return db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
}

// Statements prepares hot statements once per connection instead of
// parsing them on every call (the parser was a quarter of a read's CPU).
type Statements struct {
	db *sql.DB
	mu sync.Mutex
	m  map[string]*sql.Stmt
}

// NewStatements returns an empty cache over db.
func NewStatements(db *sql.DB) *Statements { return &Statements{db: db, m: map[string]*sql.Stmt{}} }

// In returns query prepared for use inside tx.
func (s *Statements) In(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	s.mu.Lock()
	st, ok := s.m[query]
	if !ok {
		var err error
		if st, err = s.db.PrepareContext(ctx, query); err != nil {
			s.mu.Unlock()
			return nil, err
		}
		s.m[query] = st
	}
	s.mu.Unlock()
	return tx.StmtContext(ctx, st), nil
}
