package peerbench

import (
	"fmt"
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
