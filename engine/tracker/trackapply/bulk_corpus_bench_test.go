package trackapply_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// BenchmarkBulkOnCorpus applies the peer bench's bulk (one project's 20
// 000 items moved between open and in_progress) to a database shaped as
// the bench's node holds it, where BenchmarkBulkStatusApply's is shaped
// for the apply alone:
//
//   - 100 000 items in five projects, filed as the bench's corpus is (a
//     bulk create of 100 at a time, the projects' creates interleaved),
//     ids as a node derives them (a clock prefix shared by one bulk
//     create, a random tail), titles and descriptions of the corpus's
//     length;
//   - the history kept, as a node keeps it: every bulk adds its 20 000
//     rows beside the ones before;
//   - the record cut into the node's chunks (statelog.MaxTxRows rows: 2
//     000 items a record, a transaction each), or one record (whole).
//
// Each layout of tracker_history gets a corpus of its own and the same
// bulks in the same order:
//
//   - appended: the schema's, a rowid table in sequence order with a
//     small index on (doc, seq, n);
//   - keyed: as builds before it keyed it, a WITHOUT ROWID table by
//     (item, seq, n) (with this build's doc column, which the apply
//     writes), so a bulk's rows land beside each item's earlier ones,
//     across the whole tree;
//   - appended-cache32M: the schema's with a 32 MB page cache on the one
//     connection, where the node's is SQLite's default 2 MB (the node's
//     bulk profile spilled its cache, pagerStress, and read pages back,
//     unixRead).
//
// cpu-ms/bulk is this process's CPU over the apply and its commits;
// wal-pages/bulk the pages those commits wrote; with -v, the last bulk's
// pages by b-tree.
//
//	go test -run '^$' -bench BulkOnCorpus -benchtime 2x -v ./engine/tracker/trackapply/
func BenchmarkBulkOnCorpus(b *testing.B) {
	for _, layout := range []string{"appended", "keyed", "appended-cache32M"} {
		b.Run(layout, func(b *testing.B) { bulkOnCorpus(b, layout) })
	}
}

// keyedHistory relays tracker_history as builds before the appended
// layout keyed it (with the doc column this build writes).
var keyedHistory = []string{
	`DROP TABLE tracker_history`,
	`CREATE TABLE tracker_history (item TEXT NOT NULL, seq INTEGER NOT NULL, n INTEGER NOT NULL, field TEXT NOT NULL, old TEXT NOT NULL,
		new TEXT NOT NULL, handoffs INTEGER NOT NULL, at INTEGER NOT NULL, doc INTEGER, PRIMARY KEY (item, seq, n)) WITHOUT ROWID`,
}

func bulkOnCorpus(b *testing.B, layout string) {
	const projects, perProject, perCreate = 5, 20000, 100
	d := openBenchDB(b)
	defer d.db.Close()
	// One connection, with no automatic checkpoint: a chunked bulk's
	// commits would otherwise checkpoint the WAL whose frames are counted.
	d.db.SetMaxOpenConns(1)
	setup := []string{`PRAGMA wal_autocheckpoint(0)`}
	switch layout {
	case "keyed":
		setup = append(setup, keyedHistory...)
	case "appended-cache32M":
		setup = append(setup, `PRAGMA cache_size(-32768)`)
	}
	for _, q := range setup {
		if _, err := d.db.Exec(q); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	bulkIDs := fileCorpus(d, projects, perProject, perCreate)
	b.StartTimer()
	status := []string{trackrec.StatusInProgress, trackrec.StatusOpen}
	flip := 0
	chunk := statelog.MaxTxRows / (trackrec.BulkUpdate{Status: &status[0]}).RowsPerItem()
	for _, name := range []string{"chunked", "whole", "chunked", "whole"} {
		b.Run(name, func(b *testing.B) {
			per := len(bulkIDs)
			if name == "chunked" {
				per = chunk
			}
			var cpu time.Duration
			pages := 0
			var last map[string]int
			for i := 0; i < b.N; i++ {
				to := &status[flip%2]
				flip++
				byTree, n := enginetest.CommitPages(b, d.db, func() error {
					c0 := enginetest.CPUTime()
					for start := 0; start < len(bulkIDs); start += per {
						d.inTx(func(tx *sql.Tx) {
							d.apply(tx, trackrec.KindBulkUpdate, trackrec.ProjectSubject("C2"),
								trackrec.BulkUpdate{Project: "C2", Items: bulkIDs[start:min(start+per, len(bulkIDs))], Status: to})
						})
					}
					cpu += enginetest.CPUTime() - c0
					return nil
				})
				pages, last = pages+n, byTree
			}
			b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/bulk")
			b.ReportMetric(float64(pages)/float64(b.N), "wal-pages/bulk")
			b.Logf("the last bulk's WAL pages by b-tree: %s", byShare(last))
		})
	}
}

// fileCorpus files projects×perProject items as the bench's corpus is
// filed (see BenchmarkBulkOnCorpus) and returns the ids of project C2's.
func fileCorpus(d *benchDB, projects, perProject, perCreate int) (bulkIDs []string) {
	rng := rand.New(rand.NewPCG(1, 2))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	text := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(w, " ")
	}
	d.inTx(func(tx *sql.Tx) {
		for p := range projects {
			key := fmt.Sprintf("C%d", p)
			d.apply(tx, trackrec.KindCreateProject, trackrec.ProjectSubject(key), trackrec.CreateProject{Key: key, Name: key})
		}
		clock := uint64(0x01a2528561e5)
		for n := 0; n < perProject; n += perCreate {
			for p := range projects {
				clock++
				for j := range perCreate {
					id := fmt.Sprintf("wi_%012x%020x", clock, rng.Uint64())
					d.apply(tx, trackrec.KindCreateWorkItem, trackrec.ItemSubject(id), trackrec.CreateWorkItem{ID: id, Project: fmt.Sprintf("C%d", p),
						Number: int64(n + j + 1), Title: text(6), Description: text(30), Status: trackrec.StatusOpen})
					if p == 2 {
						bulkIDs = append(bulkIDs, id)
					}
				}
			}
		}
	})
	return bulkIDs
}

// byShare renders pages by b-tree, largest first.
func byShare(pages map[string]int) string {
	names := make([]string, 0, len(pages))
	for n := range pages {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool { return pages[names[i]] > pages[names[j]] })
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("%s %d", n, pages[n]))
	}
	return strings.Join(out, ", ")
}
