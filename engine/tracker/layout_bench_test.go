package tracker_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
)

// BenchmarkItemsLayout is the statements a bulk status change applies to
// 20 000 items (the read of its items' columns, then the multi-row
// UPDATE ... FROM of the light write, 1 000 rows a statement, in records
// of 2 000 items) against tracker_items in the older WITHOUT ROWID layout
// and in the rowid layout, with descriptions of 120 and 1 000 bytes, and
// ids in the order of the items' docs (as UUIDv7 op ids minted one after
// another give them) or scattered (ids minted apart from the order the
// items were filed in): the measurement behind making it a rowid table.
//
//	go test -run '^$' -bench ItemsLayout -benchtime 10x ./engine/tracker
func BenchmarkItemsLayout(b *testing.B) {
	for _, scattered := range []bool{false, true} {
		for _, desc := range []int{120, 1000} {
			for _, older := range []bool{true, false} {
				name := map[bool]string{true: "without_rowid", false: "rowid"}[older] +
					map[bool]string{true: "/ids=scattered", false: "/ids=ordered"}[scattered] + fmt.Sprintf("/desc=%d", desc)
				b.Run(name, func(b *testing.B) {
					db, ids := layoutItems(b, older, scattered, 20000, desc)
					b.ResetTimer()
					for i := 0; i < b.N; i++ {
						flipStatuses(b, db, ids, i)
					}
				})
			}
		}
	}
}

// layoutItems files n items of one project in a fresh file with the
// tracker's schema, in the older layout where asked, their ids in the
// order of their docs or scattered.
func layoutItems(b *testing.B, older, scattered bool, n, descLen int) (*sql.DB, []string) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), sqlite.FileName), 5)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(trackapply.Domain{}.Schema()); err != nil {
		b.Fatal(err)
	}
	if older {
		if err := enginetest.OlderItemsLayout(context.Background(), db, trackapply.Domain{}.Schema()); err != nil {
			b.Fatal(err)
		}
	}
	desc := strings.Repeat("lorem ipsum ", descLen/12)
	ids := make([]string, n)
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range ids {
		ids[i] = fmt.Sprintf("wi_%032x", i)
		if scattered {
			ids[i] = fmt.Sprintf("wi_%032x", uint64(i)*0x9e3779b97f4a7c15)
		}
		if _, err := tx.Exec(`INSERT INTO tracker_items(id, doc, key, project, number, title, description, status, assignee, version, created_at, updated_at)
			VALUES(?, ?, ?, 'ENG', ?, 'a title of five words', ?, 'open', 'user-a', 1, 1, 1)`, ids[i], i+1, fmt.Sprintf("ENG-%d", i+1), i+1, desc); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return db, ids
}

// flipStatuses is one bulk status change over ids, as the applier's
// statements make it.
func flipStatuses(b *testing.B, db *sql.DB, ids []string, round int) {
	to := []string{"done", "open"}[round%2]
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	defer tx.Rollback()
	for start := 0; start < len(ids); start += 1000 {
		part := ids[start:min(start+1000, len(ids))]
		args := make([]any, 0, 7*len(part))
		for _, id := range part {
			args = append(args, id)
		}
		rows, err := tx.Query(`SELECT id, project, status, assignee, reopens, handoffs, version, scoped_through, updated_at FROM tracker_items WHERE id IN (`+sqlite.Placeholders(len(part))+`)`, args...)
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
		}
		rows.Close()
		args = args[:0]
		for _, id := range part {
			args = append(args, id, 0, 0, round+2, round+2, round+2, to)
		}
		if _, err := tx.Exec(`WITH v(id, reopens, handoffs, version, scoped_through, updated_at, status) AS (VALUES `+sqlite.Tuples(len(part), 7)+`)
			UPDATE OR FAIL tracker_items SET reopens = v.reopens, handoffs = v.handoffs, version = v.version, scoped_through = v.scoped_through,
			updated_at = v.updated_at, status = v.status FROM v WHERE tracker_items.id = v.id`, args...); err != nil {
			b.Fatal(err)
		}
		if (start+1000)%2000 == 0 {
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			if tx, err = db.Begin(); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}
