package tracker_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
)

// The read benchmarks of search_work_items and list_work_items at 100 000
// work items, each beside a bare loop in the same run, at concurrency 1,
// 16 and 64:
//
//	go test -run '^$' -bench 'SearchP50|ListP50' -benchtime 2000x ./engine/tracker/
//
// Building the fixture takes a minute or more; with CREWLET_BENCH_FIXTURES
// naming a directory it is built once there (keyed by the schema) and
// copied for each run.

const benchItems = 100_000

// searchFixture opens a node on a fresh copy of the 100 000-item fixture.
func searchFixture(b *testing.B) (*node.Node, []string) {
	dir := b.TempDir()
	words := vocabulary(2000)
	dst := filepath.Join(dir, sqlite.FileName)
	cache := os.Getenv("CREWLET_BENCH_FIXTURES")
	if cache == "" {
		buildFixture(b, dst, benchItems, words)
	} else {
		h := sha256.Sum256([]byte(trackapply.Domain{}.Schema()))
		src := filepath.Join(cache, fmt.Sprintf("tracker-%d-%s.db", benchItems, hex.EncodeToString(h[:6])))
		if _, err := os.Stat(src); err != nil {
			buildFixture(b, src+".tmp", benchItems, words)
			if err := os.Rename(src+".tmp", src); err != nil {
				b.Fatal(err)
			}
		}
		copyFile(b, src, dst)
	}
	return enginetest.OpenNode(b, node.Config{DataDir: dir}), words
}

func copyFile(b *testing.B, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}

// concurrently runs op and bare alternately from conc workers until b.N
// of each are done, timing each call, and reports op's p50 and p99 in ms,
// the bare loop's p50, their ratio and op's rate.
func concurrently(b *testing.B, conc int, op, bare func(i int) error) {
	per := (b.N + conc - 1) / conc
	lat := make([][]time.Duration, conc)
	blat := make([][]time.Duration, conc)
	var opTime time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	b.ResetTimer()
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var spent time.Duration
			for i := w * per; i < (w+1)*per; i++ {
				t0 := time.Now()
				if err := op(i); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(t0)
				spent += d
				lat[w] = append(lat[w], d)
				t0 = time.Now()
				if err := bare(i); err != nil {
					b.Error(err)
					return
				}
				blat[w] = append(blat[w], time.Since(t0))
			}
			mu.Lock()
			opTime += spent
			mu.Unlock()
		}()
	}
	wg.Wait()
	b.StopTimer()
	var all, ball []time.Duration
	for w := range lat {
		all = append(all, lat[w]...)
		ball = append(ball, blat[w]...)
	}
	if len(all) == 0 || len(ball) == 0 {
		return
	}
	p50, bp50 := median(all), median(ball)
	b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(percentile(all, 99).Microseconds())/1000, "p99-ms")
	b.ReportMetric(float64(bp50.Microseconds())/1000, "bare-p50-ms")
	b.ReportMetric(float64(p50)/float64(bp50), "ratio-to-bare")
	b.ReportMetric(float64(len(all))*float64(conc)/opTime.Seconds(), "ops/s")
}

// bareMatch is the floor of a search: the same FTS5 MATCH on the same
// database, ranked by the same bm25 weights, LIMIT 21 rowids, no join, no
// snippet, no read machinery.
func bareMatch(n *node.Node, q string) error {
	rows, err := n.DB().Query(`SELECT rowid FROM tracker_search WHERE tracker_search MATCH ? ORDER BY bm25(tracker_search, 10.0, 3.0, 1.0) LIMIT 21`, `"`+q+`"`)
	if err != nil {
		return err
	}
	defer rows.Close()
	k := 0
	for rows.Next() {
		k++
	}
	if k == 0 {
		return fmt.Errorf("bare match %q: no rows", q)
	}
	return rows.Err()
}

// bareGet is the floor of a read of one row: a bare SELECT by primary key.
func bareGet(n *node.Node, i int) error {
	var title string
	return n.DB().QueryRow(`SELECT title FROM tracker_items WHERE project = 'ENG' AND number = ?`, 1+i%benchItems).Scan(&title)
}

// BenchmarkSearchP50 measures search_work_items (a first page of 20, and
// the second page through its cursor) at 100 000 work items beside a bare
// FTS5 MATCH of the same word on the same database.
func BenchmarkSearchP50(b *testing.B) {
	n, words := searchFixture(b)
	svc := n.Tracker()
	ctx := context.Background()
	stale := engine.ReadOptions{Level: engine.Stale}
	for _, conc := range []int{1, 16, 64} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			concurrently(b, conc, func(i int) error {
				q := words[i%len(words)]
				res, err := svc.SearchWorkItems(ctx, stale, q, "", 20)
				if err == nil && len(res.Hits) == 0 {
					err = fmt.Errorf("search %q: no hits", q)
				}
				return err
			}, func(i int) error { return bareMatch(n, words[i%len(words)]) })
		})
	}
	b.Run("page2", func(b *testing.B) {
		first := make([]string, len(words))
		for i, q := range words[:min(b.N, len(words))] {
			res, err := svc.SearchWorkItems(ctx, stale, q, "", 20)
			if err != nil {
				b.Fatal(err)
			}
			first[i] = res.NextCursor
		}
		concurrently(b, 1, func(i int) error {
			q := words[i%len(words)]
			if first[i%len(words)] == "" {
				return nil
			}
			_, err := svc.SearchWorkItemsPage(ctx, stale, tracker.SearchQuery{Query: q, Limit: 20, Cursor: first[i%len(words)]})
			return err
		}, func(i int) error { return bareMatch(n, words[i%len(words)]) })
	})
}

// BenchmarkReadsAt100k measures get_work_item and a first page of
// list_work_items (project filter, status filter, sort by -updated) at
// stale at 100 000 items, beside a bare primary-key SELECT.
func BenchmarkReadsAt100k(b *testing.B) {
	n, _ := searchFixture(b)
	svc := n.Tracker()
	ctx := context.Background()
	stale := engine.ReadOptions{Level: engine.Stale}
	b.Run("get", func(b *testing.B) {
		concurrently(b, 1, func(i int) error {
			_, err := svc.GetWorkItem(ctx, stale, fmt.Sprintf("ENG-%d", 1+i%benchItems))
			return err
		}, func(i int) error { return bareGet(n, i) })
	})
	b.Run("list", func(b *testing.B) {
		concurrently(b, 1, func(i int) error {
			_, err := svc.ListWorkItems(ctx, stale, tracker.ListFilter{Project: "ENG", Status: "open", Sort: "-updated", Limit: 20})
			return err
		}, func(i int) error { return bareGet(n, i) })
	})
}
