package node_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// BenchmarkScrape: one full gather of a node's metrics, what a GET
// /metrics costs before encoding: each domain's log end and fill asked of
// the broker, the ledger counted, the alarms read. Compare with
// BenchmarkBareBarrierLoop in the same run:
//
//	go test -run '^$' -bench 'Scrape|BareBarrierLoop' -benchtime 500x ./engine/node/
func BenchmarkScrape(b *testing.B) {
	n := enginetest.OpenNode(b, node.Config{})
	ctx := context.Background()
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	if _, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "bench"}); err != nil {
		b.Fatal(err)
	}
	g := n.Metrics().Gatherer()
	enginetest.Timed(b, func(int) {
		if _, err := g.Gather(); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkLedgerRows: the operation ledger's rows counted by domain, as
// a scrape counts them, over a ledger of 100 000 rows in six domains: a
// count for each domain (the scrape up to this build: the ledger has no
// index by domain, so each read the whole table), one GROUP BY (which
// sorts the table) and one pass with a count for each domain
// (LedgerRowsByDomain).
//
//	go test -run '^$' -bench LedgerRows -benchtime 20x ./engine/node/
func BenchmarkLedgerRows(b *testing.B) {
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
			got, sum := node.LedgerRowsByDomain(ctx, db, domains), int64(0)
			for _, n := range got {
				sum += n
			}
			if len(got) != len(domains) || sum != 100000 {
				b.Fatalf("counted %v", got)
			}
		}
	})
}
