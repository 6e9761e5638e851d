package ledger_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/ledger"
)

// BenchmarkRowsByDomain: the operation ledger's rows counted by domain, as
// a scrape counts them, over a ledger of 100 000 rows in six domains: a
// count for each domain (the scrape up to this build: the ledger has no
// index by domain, so each read the whole table), one GROUP BY (which
// sorts the table) and one pass with a count for each domain
// (RowsByDomain).
//
//	go test -run '^$' -bench RowsByDomain -benchtime 20x ./ledger/
func BenchmarkRowsByDomain(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "ledger.db"), 2)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(ledger.Schema); err != nil {
		b.Fatal(err)
	}
	domains := []string{"tracker", "kb", "usage", "vectors", "fleet", "duties"}
	tx, err := db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	for i := range 100000 {
		if _, err := tx.Exec(`INSERT INTO statelog_ledger(op_id, domain, subject, object, generation, seq, applied_at) VALUES(?, ?, ?, ?, 1, ?, ?)`,
			fmt.Sprintf("0193b7c2-%08x-7000-8000-%012x", i, i*7919), domains[i%len(domains)], "tracker.item.wi_0193b7c2", "ENG-1", i+1, int64(i)); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.Run("each-domain", func(b *testing.B) {
		for range b.N {
			for _, d := range domains {
				var n int64
				if err := db.QueryRowContext(ctx, `SELECT count(*) FROM statelog_ledger WHERE domain = ?`, d).Scan(&n); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("group-by", func(b *testing.B) {
		for range b.N {
			rows, err := db.QueryContext(ctx, `SELECT domain, count(*) FROM statelog_ledger GROUP BY domain`)
			if err != nil {
				b.Fatal(err)
			}
			for rows.Next() {
			}
			rows.Close()
		}
	})
	b.Run("one-pass", func(b *testing.B) {
		for range b.N {
			got, sum := ledger.RowsByDomain(ctx, db, domains), int64(0)
			for _, n := range got {
				sum += n
			}
			if len(got) != len(domains) || sum != 100000 {
				b.Fatalf("counted %v", got)
			}
		}
	})
}
