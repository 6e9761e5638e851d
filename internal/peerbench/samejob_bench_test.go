package peerbench

import (
	"flag"
	"fmt"
	"os"
	"testing"

	"github.com/crewlet/crewlet/engine/enginetest"
)

// BenchmarkSameJobCreateWALPages counts the database pages the same-job
// create writes as rqlite runs it (one transaction: the operation's row,
// the project's counter, the item and its indexes, its FTS5 and history
// rows), in this project's SQLite with its pragmas: the figure to hold
// beside engine/node's BenchmarkCreateWALPages, a Crewlet create's. The
// WAL is emptied before each create and its frames counted after
// (enginetest.WALPages, which with -v also says which tables and indexes
// the last create wrote), so the figure is wal-pages/op.
func BenchmarkSameJobCreateWALPages(b *testing.B) {
	d := openSameJob(b)
	frames := 0
	var last map[string]int
	for i := 0; i < b.N; i++ {
		byTree, total := enginetest.CommitPages(b, d.db, func() error {
			title, desc := corpusText(i)
			_, err := d.txn(createTxn(fmt.Sprintf("op-%d", i), "CR", title, desc, assignee(i), int64(i)))
			return err
		})
		frames, last = frames+total, byTree
	}
	b.ReportMetric(float64(frames)/float64(b.N), "wal-pages/op")
	// With -v: which tables and indexes the last create wrote.
	b.Logf("the last create's WAL pages by b-tree: %v", last)
}

// sameJobCorpus is how many items BenchmarkSameJobSQL's search reads: the
// bench's own default (DefaultCorpus), smaller for a quick look.
var sameJobCorpus = flag.Int("samejob.corpus", DefaultCorpus, "items BenchmarkSameJobSQL/search reads")

// BenchmarkSameJobSQL runs the statements the bench sends rqlite for each
// same-job workload, unchanged, on this project's SQLite
// (modernc.org/sqlite with the node's pragmas), in this process: no HTTP,
// no consensus, no JSON, no log. Each op is one of rqlite's requests: a
// create's or an update's transaction, a get's three queries, a search's
// page, a bulk's transaction over DefaultBulk items. Its cpu-ns/op (this
// process's CPU over the loop) is the floor this stack's SQLite sets
// under the workload: hold it beside rqlite's whole CPU/op in a
// `crewlet bench --rqlited` run of the same sitting. Where the floor is at
// or above rqlite's whole request, a goal of matching rqlite on that
// workload is out of this driver's reach whatever Crewlet does above it.
//
//	go test -run '^$' -bench SameJobSQL -benchtime 20x ./internal/peerbench
func BenchmarkSameJobSQL(b *testing.B) {
	b.Run("create", func(b *testing.B) {
		d := openSameJob(b)
		cpuLoop(b, func(i int) error {
			title, desc := corpusText(i)
			_, err := d.txn(createTxn(fmt.Sprintf("op-%d", i), "CR", title, desc, assignee(i), int64(i)))
			return err
		})
	})
	b.Run("update", func(b *testing.B) {
		d := seededSameJob(b, "UP", Workers)
		cpuLoop(b, func(i int) error {
			title, _ := corpusText(i)
			res, err := d.txn(updateTxn(fmt.Sprintf("op-%d", i), "UP-1", int64(i+1), title, int64(i)))
			if err == nil && res[updateApplied] != 1 {
				err = fmt.Errorf("update %d: stale", i)
			}
			return err
		})
	})
	b.Run("get", func(b *testing.B) {
		d := seededSameJob(b, "GT", 1)
		if _, err := d.txn(dressItem("GT-1", []string{"backend", "perf"}, []string{"ann", "bob"})); err != nil {
			b.Fatal(err)
		}
		cpuLoop(b, func(int) error { return d.query(getQueries("GT-1")...) })
	})
	b.Run("search", func(b *testing.B) {
		d := seededSameJob(b, "SR", *sameJobCorpus)
		cpuLoop(b, func(i int) error { return d.query(searchQuery(searchTerms(i), 10)) })
	})
	b.Run("bulk", func(b *testing.B) {
		d := seededSameJob(b, "BK", DefaultBulk)
		cpuLoop(b, func(i int) error {
			from, to := bulkStatuses(i)
			res, err := d.txn(bulkTxn(fmt.Sprintf("op-%d", i), "BK", from, to, int64(i)))
			if err == nil && res[2] != DefaultBulk {
				err = fmt.Errorf("bulk %d changed %d items", i, res[2])
			}
			return err
		})
	})
}

// seededSameJob is a same-job database whose project holds n items of
// the corpus, filed as the bench files rqlite's.
func seededSameJob(b *testing.B, project string, n int) *sameJobDB {
	d := openSameJob(b)
	if _, err := d.txn(newProject(project, project)); err != nil {
		b.Fatal(err)
	}
	for first := 0; first < n; first += 1000 {
		if _, err := d.txn(seedItems(project, first+1, first, min(1000, n-first), 1)); err != nil {
			b.Fatal(err)
		}
	}
	return d
}

// query runs stmts as one read, every row read.
func (d *sameJobDB) query(stmts ...stmt) error {
	for _, s := range stmts {
		if err := readAll(d.db.Query(s.sqlOf(), s.argsOf()...)); err != nil {
			return err
		}
	}
	return nil
}

// cpuLoop runs op b.N times and reports this process's CPU per op.
func cpuLoop(b *testing.B, op func(i int) error) {
	before, err := processesCPU([]int{os.Getpid()})
	if err != nil {
		b.Skip(err)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := op(i); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	after, _ := processesCPU([]int{os.Getpid()})
	b.ReportMetric(float64(after-before)/float64(b.N), "cpu-ns/op")
}
