package trackapply_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// BenchmarkBulkStatusApply applies the peer bench's bulk (every item of a
// project of 20 000 moved between open and in_progress, one record, one
// transaction and its commit) to a real SQLite file, the record applied
// by hand as the applier applies it:
//
//   - set: by statements over its ids (bulkBySet, what a node does);
//   - row: row by row (bulkByRow, the reference in bulk_row_test.go,
//     what builds before the set apply ran);
//   - filter: the same history rows and row writes by the project's
//     status index rather than by ids, rqlite's statements in the bench's
//     same job on this schema: the floor under addressing items by id.
//
// The cases alternate on one database, each a round of its own; before
// each bulk the last one's history rows are deleted and the WAL emptied.
// cpu-ms/bulk is this process's CPU over the apply and the commit;
// wal-pages/bulk the pages its commit wrote (with -v, by table and index:
// what the node's checkpointer then copies into the database file).
//
//	go test -run '^$' -bench BulkStatusApply -benchtime 10x ./engine/tracker/trackapply/
func BenchmarkBulkStatusApply(b *testing.B) {
	const items = 20000
	d := openBenchDB(b)
	defer d.db.Close()
	ids := make([]string, items)
	d.inTx(func(tx *sql.Tx) {
		d.apply(tx, trackrec.KindCreateProject, trackrec.ProjectSubject("BK"), trackrec.CreateProject{Key: "BK", Name: "bulk"})
		for i := range ids {
			ids[i] = fmt.Sprintf("wi_01a2517b19e27000c%016d", i)
			d.apply(tx, trackrec.KindCreateWorkItem, trackrec.ItemSubject(ids[i]), trackrec.CreateWorkItem{ID: ids[i], Project: "BK", Number: int64(i + 1),
				Title: "a bulk item", Status: trackrec.StatusOpen})
		}
	})
	flip := 0
	next := func() (from, to string) {
		flip++
		if flip%2 == 1 {
			return trackrec.StatusOpen, trackrec.StatusInProgress
		}
		return trackrec.StatusInProgress, trackrec.StatusOpen
	}
	bulk := func(tx *sql.Tx) {
		_, to := next()
		d.apply(tx, trackrec.KindBulkUpdate, trackrec.ProjectSubject("BK"), trackrec.BulkUpdate{Project: "BK", Items: ids, Status: &to})
	}
	cases := map[string]func(tx *sql.Tx){
		"set": bulk,
		"row": func(tx *sql.Tx) {
			defer trackapply.RowBulk()()
			bulk(tx)
		},
		"filter": func(tx *sql.Tx) {
			from, to := next()
			d.seq++
			ts := time.Unix(1_700_000_000+int64(d.seq), 0).UnixNano()
			for _, q := range []string{
				`INSERT INTO tracker_history(item, seq, n, field, old, new, handoffs, at, doc) SELECT id, ?1, 0, 'status', status, ?2, handoffs, ?3, doc FROM tracker_items WHERE project = ?4 AND status = ?5`,
				`UPDATE tracker_items SET status = ?2, scoped_through = ?1, updated_at = ?3 WHERE project = ?4 AND status = ?5`,
			} {
				if res, err := tx.Exec(q, d.seq, to, ts, "BK", from); err != nil {
					b.Fatal(err)
				} else if n, _ := res.RowsAffected(); n != items {
					b.Fatalf("filter moved %d items", n)
				}
			}
		},
	}
	for _, order := range [][]string{{"set", "row", "filter"}, {"filter", "row", "set"}, {"set", "row", "filter"}} {
		for _, name := range order {
			b.Run(name, func(b *testing.B) {
				var cpu time.Duration
				pages := 0
				var last map[string]int
				for i := 0; i < b.N; i++ {
					// The last bulk's history rows go, so every bulk files
					// onto a history of the same size; its WAL is emptied
					// first (as a node's checkpointer keeps it short) and
					// its pages counted after.
					b.StopTimer()
					d.forget(ids)
					b.StartTimer()
					byTree, n := enginetest.CommitPages(b, d.db, func() error {
						c0 := enginetest.CPUTime()
						d.inTx(cases[name])
						cpu += enginetest.CPUTime() - c0
						return nil
					})
					pages, last = pages+n, byTree
				}
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/bulk")
				b.ReportMetric(float64(pages)/float64(b.N), "wal-pages/bulk")
				b.Logf("the last bulk's WAL pages by b-tree: %v", last)
			})
		}
	}
}

// benchDB is a tracker's database whose records a benchmark applies by
// hand, seq the last one's sequence.
type benchDB struct {
	b   *testing.B
	db  *sql.DB
	seq uint64
}

func openBenchDB(b *testing.B) *benchDB {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bulk.db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := db.Exec(trackapply.Domain{}.Schema()); err != nil {
		b.Fatal(err)
	}
	return &benchDB{b: b, db: db}
}

// apply applies a record in tx at the next sequence.
func (d *benchDB) apply(tx *sql.Tx, kind, subject string, payload any) {
	d.seq++
	if err := applyByHand(context.Background(), tx, d.seq, kind, subject, payload); err != nil {
		d.b.Fatal(err)
	}
}

// forget deletes the history rows the last bulk wrote on ids, then
// empties the WAL (a TRUNCATE checkpoint).
func (d *benchDB) forget(ids []string) {
	b, seq := d.b, d.seq
	d.inTx(func(tx *sql.Tx) {
		for start := 0; start < len(ids); start += 1000 {
			chunk := ids[start:min(start+1000, len(ids))]
			args := []any{seq}
			for _, id := range chunk {
				args = append(args, id)
			}
			if _, err := tx.Exec(`DELETE FROM tracker_history WHERE seq = ? AND doc IN (SELECT doc FROM tracker_items WHERE id IN (`+sqlite.Placeholders(len(chunk))+`))`, args...); err != nil {
				b.Fatal(err)
			}
		}
	})
	if _, err := d.db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
}

// inTx runs fn in a write transaction and commits it.
func (d *benchDB) inTx(fn func(tx *sql.Tx)) {
	b := d.b
	tx, err := sqlite.BeginWrite(context.Background(), d.db)
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	fn(tx)
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
