package node_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// BenchmarkCreateWALPages counts the database pages a lone create writes,
// in every transaction it causes on its node (the apply's: the item and
// its indexes, FTS5, history, ledger, anchor, checkpoint): at one writer
// each is a transaction of its own, and its commit writes and checksums
// every page it touched into the WAL, one pwrite a page. The WAL is
// emptied before each create (a TRUNCATE checkpoint) and its frames
// counted after (enginetest.WALPages, which with -v also says which
// tables and indexes the last create wrote), so the figure is
// wal-pages/op; ns/op is the create's own time.
func BenchmarkCreateWALPages(b *testing.B) {
	ctx := context.Background()
	n := enginetest.OpenNode(b, node.Config{})
	svc := n.Tracker()
	if pw, err := svc.CreateProject(ctx, engine.WriteOptions{}, "PG", "pages"); err != nil || pw.Outcome != engine.Applied {
		b.Fatalf("create project: %+v %v", pw, err)
	}
	db := n.DB()
	frames := 0
	var last map[string]int
	for i := 0; i < b.N; i++ {
		byTree, total := enginetest.CommitPages(b, db, func() error {
			// Five words of title and sixteen of description, as the
			// bench's corpus gives an item (internal/peerbench: corpusText).
			w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "PG", Title: words(i, 5),
				Description: words(i+1, 16), Assignee: fmt.Sprintf("user-%c", 'a'+i%16)})
			if err == nil && w.Outcome != engine.Applied {
				err = fmt.Errorf("create: %+v", w)
			}
			return err
		})
		frames, last = frames+total, byTree
	}
	b.ReportMetric(float64(frames)/float64(b.N), "wal-pages/op")
	// With -v: which tables and indexes the last create wrote.
	b.Logf("the last create's WAL pages by b-tree: %v", last)
}

// words is n words of text i, drawn from a vocabulary of 500.
func words(i, n int) string {
	out := make([]string, n)
	for k := range out {
		out[k] = fmt.Sprintf("w%d", (i*7+k*13)%500)
	}
	return strings.Join(out, " ")
}
