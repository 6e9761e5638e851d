//go:build integration

package trackapply_test

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/statelog/applytest"
	"github.com/crewlet/crewlet/engine/statelog/statelogtest"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// sizeRig is a tracker log in memory and one node's file, with every
// multi-row statement the apply runs and every transaction it commits
// written down.
type sizeRig struct {
	t      *testing.T
	stream *statelogtest.Stream
	path   string
	n      int

	mu    sync.Mutex
	stmts []stmt // since the last commit
	txs   []txSizes
}

type stmt struct {
	head string
	rows int
}

// txSizes is one committed transaction: the last sequence it covers and
// the statements it ran.
type txSizes struct {
	last  uint64
	stmts []stmt
}

func (tx txSizes) rows() int {
	n := 0
	for _, s := range tx.stmts {
		n += s.rows
	}
	return n
}

func (r *sizeRig) publish(rec *record.Record) uint64 {
	r.t.Helper()
	r.n++
	id, err := ledger.Derive("sizes", r.stream.Now(), "script", fmt.Sprint(r.n), "", 0)
	if err != nil {
		r.t.Fatal(err)
	}
	rec.OpID, rec.Writer, rec.Generation, rec.By, rec.Version = id.String(), "n1", 1, "operator", max(rec.Version, 1)
	data, err := record.Encode(rec)
	if err != nil {
		r.t.Fatal(err)
	}
	ack, err := r.stream.Log("n1").Publish(context.Background(), rec.Subject, data, rec.OpID, nil)
	if err != nil {
		r.t.Fatal(err)
	}
	return ack.Seq
}

// apply opens the node on its file, lets its reader hand over everything
// published since it last ran (one delivery), waits until it applied
// through last, and closes it.
func (r *sizeRig) apply(last uint64) *statelog.Replica {
	r.t.Helper()
	db, err := sqlite.Open(r.path, 5)
	if err != nil {
		r.t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := statelog.Open(ctx, statelog.Config{Node: "n1", DB: db, Log: r.stream.Log("n1"), Domain: trackapply.Domain{},
		Clock: r.stream, Logger: slog.New(slog.DiscardHandler), Publishing: true,
		BeforeCommit: func(_ *sql.Tx, seq uint64) error {
			r.mu.Lock()
			r.txs = append(r.txs, txSizes{last: seq, stmts: r.stmts})
			r.stmts = nil
			r.mu.Unlock()
			return nil
		}})
	if err != nil {
		r.t.Fatal(err)
	}
	defer rep.Close()
	if err := rep.WaitApplied(ctx, last); err != nil {
		r.t.Fatalf("never applied %d: %v", last, err)
	}
	return rep
}

// TestBulkStatementAndTransactionSizes: Replication › How far behind a
// node can be: "An applier writes a record’s child rows … as multi-row
// inserts chunked to the engine’s probed bind-parameter limit, and to at
// most 1 000 rows a statement, rather than one statement per row. …
// the 1 000-row cap is what binds" and "A bulk update commits one
// transaction at a time — at most 4 000 rows". A bulk update of 3 000
// items adding a tag is three records, cut as the tracker cuts them
// (statelog.MaxTxRows over the rows an item costs: its row, a tag row and
// a history row: 1 333 items, 3 999 rows); the node receives all three
// in one delivery, as a node catching up does, and the real applier
// writes them. A bulk record's statements each take at most 1 000 of its
// ids (bulkBySet) and write a row or none for each; every statement holds
// at most 1 000 rows, some exactly 1 000 (the cap binds, not the bind
// limit), and no transaction writes more than 4 000 rows: two such
// records are never committed together.
func TestBulkStatementAndTransactionSizes(t *testing.T) {
	const items = 3000
	tags := []string{"a"}
	r := &sizeRig{t: t, stream: statelogtest.NewStream(statelogtest.Options{}), path: filepath.Join(t.TempDir(), "n1.db")}
	t.Cleanup(trackapply.TraceStatements(func(head string, rows int) {
		r.mu.Lock()
		r.stmts = append(r.stmts, stmt{head, rows})
		r.mu.Unlock()
	}))
	p, err := applytest.Make(trackrec.KindCreateProject, trackrec.ProjectSubject("ENG"), []string{trackrec.ProjectScope("ENG")}, trackrec.CreateProject{Key: "ENG", Name: "Engineering"})
	if err != nil {
		t.Fatal(err)
	}
	last := r.publish(p)
	ids := make([]string, items)
	for i := range ids {
		ids[i] = fmt.Sprintf("i%d", i)
		c, err := applytest.Make(trackrec.KindCreateWorkItem, trackrec.ItemSubject(ids[i]), []string{trackrec.ProjectScope("ENG"), trackrec.ItemScope(ids[i])},
			trackrec.CreateWorkItem{ID: ids[i], Project: "ENG", Title: fmt.Sprintf("item %d", i), Status: trackrec.StatusOpen})
		if err != nil {
			t.Fatal(err)
		}
		last = r.publish(c)
	}
	r.apply(last)

	// The bulk, as tracker.BulkUpdate cuts it: rows an item costs, and
	// as many items a record as MaxTxRows allows.
	per := 1 + 2*len(tags)
	chunk := statelog.MaxTxRows / per
	first := last + 1
	for start := 0; start < items; start += chunk {
		b, err := applytest.Make(trackrec.KindBulkUpdate, trackrec.ProjectSubject("ENG"), []string{trackrec.ProjectScope("ENG")},
			trackrec.BulkUpdate{Project: "ENG", Items: ids[start:min(start+chunk, items)], AddTags: tags})
		if err != nil {
			t.Fatal(err)
		}
		last = r.publish(b)
	}
	r.mu.Lock()
	r.txs, r.stmts = nil, nil
	r.mu.Unlock()
	r.apply(last)

	r.mu.Lock()
	defer r.mu.Unlock()
	var txs []string
	capped := false
	for _, tx := range r.txs {
		txs = append(txs, fmt.Sprintf("through %d: %d rows in %d statements", tx.last, tx.rows(), len(tx.stmts)))
		for _, s := range tx.stmts {
			if s.rows > trackapply.MaxRowsPerStatement {
				t.Errorf("a statement of %d rows (%s…), more than %d", s.rows, s.head, trackapply.MaxRowsPerStatement)
			}
			capped = capped || s.rows == trackapply.MaxRowsPerStatement
		}
		if n := tx.rows(); n > statelog.MaxTxRows {
			t.Errorf("a transaction through %d wrote %d rows, more than %d", tx.last, n, statelog.MaxTxRows)
		}
	}
	if !capped {
		t.Errorf("no statement took the %d-row cap, although a record wrote more rows than that to one table", trackapply.MaxRowsPerStatement)
	}
	if len(r.txs) < int(last-first+1) {
		t.Errorf("%d bulk records committed in %d transactions: %s", last-first+1, len(r.txs), strings.Join(txs, "; "))
	}
	t.Logf("%s", strings.Join(txs, "; "))
}
