package kb_test

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
)

// The search benchmark runs over 100 000 pages written as bulk rows into a
// real node's database (the index triggers build the FTS5 entries, as the
// apply does), and reports p50 and p99 in µs for search_knowledge through
// the service beside a bare FTS5 MATCH on the same corpus in the same run:
//
//	go test -run '^$' -bench Search -benchtime 2000x ./engine/kb/

const benchPages = 100_000

var (
	fixtureOnce sync.Once
	fixtureNode *node.Node
	fixtureErr  error
	fixtureDir  string
	vocabulary  []string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureNode != nil {
		fixtureNode.Close()
	}
	if fixtureDir != "" {
		os.RemoveAll(fixtureDir)
	}
	os.Exit(code)
}

// word i of the synthetic vocabulary: pronounceable, distinct, stable.
func word(i int) string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var b strings.Builder
	for n := i + 30; n > 0; n /= 70 {
		d := n % 70
		b.WriteByte(cons[d%14])
		b.WriteByte(vows[d/14])
	}
	return b.String()
}

func fixture(b *testing.B) *node.Node {
	fixtureOnce.Do(func() {
		vocabulary = make([]string, 5000)
		for i := range vocabulary {
			vocabulary[i] = word(i)
		}
		// The node outlives the benchmark functions that share it; TestMain
		// closes it and removes its directory.
		dir, err := os.MkdirTemp("", "crewlet-kb-bench-")
		if err != nil {
			fixtureErr = err
			return
		}
		fixtureDir = dir
		n, err := node.Open(context.Background(), node.Config{DataDir: dir, Name: "bench", Logger: enginetest.Logger()})
		if err != nil {
			fixtureErr = err
			return
		}
		fixtureNode = n
		if _, err := n.Pages().CreateSpace(context.Background(), engine.WriteOptions{}, "BENCH", "Bench"); err != nil {
			fixtureErr = err
			return
		}
		r := rand.New(rand.NewSource(1))
		z := rand.NewZipf(r, 1.1, 1, uint64(len(vocabulary)-1))
		words := func(k int) string {
			ws := make([]string, k)
			for i := range ws {
				ws[i] = vocabulary[z.Uint64()]
			}
			return strings.Join(ws, " ")
		}
		start := time.Now()
		tx, err := n.DB().Begin()
		if err != nil {
			fixtureErr = err
			return
		}
		st, err := tx.Prepare(`INSERT INTO kb_pages(n, id, space, parent, title, body, version, created_at, updated_at) VALUES(?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			fixtureErr = err
			return
		}
		for i := 0; i < benchPages; i++ {
			seq := 1_000_000 + i
			if _, err := st.Exec(seq, fmt.Sprintf("pg_%032x", seq), "BENCH", "", words(3+r.Intn(5)), words(40+r.Intn(60)), seq, 0, 0); err != nil {
				fixtureErr = err
				return
			}
		}
		st.Close()
		fixtureErr = tx.Commit()
		b.Logf("fixture: %d pages indexed in %v", benchPages, time.Since(start).Round(time.Millisecond))
	})
	if fixtureErr != nil {
		b.Fatal(fixtureErr)
	}
	return fixtureNode
}

// queries mix a very common word, middling and rare ones, and two-word
// queries, in a fixed rotation.
func benchQueries() []string {
	return []string{vocabulary[3], vocabulary[40], vocabulary[400], vocabulary[3000],
		vocabulary[10] + " " + vocabulary[60], vocabulary[200] + " " + vocabulary[900], vocabulary[25] + "*"}
}

func report(b *testing.B, l []time.Duration) {
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// BenchmarkSearchKnowledge is the service at the stale level (no barrier:
// the barrier's cost is the read path's, measured in engine/node) and at
// linearizable, beside the bare MATCH.
func BenchmarkSearchKnowledge(b *testing.B) {
	n := fixture(b)
	svc := n.Pages()
	qs := benchQueries()
	for _, level := range []engine.ReadLevel{engine.Stale, engine.Linearizable} {
		b.Run(string(level), func(b *testing.B) {
			l := make([]time.Duration, 0, b.N)
			hits := 0
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				res, err := svc.SearchKnowledge(bg, engine.ReadOptions{Level: level}, kb.SearchQuery{Query: qs[i%len(qs)], Limit: 10})
				l = append(l, time.Since(t0))
				if err != nil {
					b.Fatal(err)
				}
				hits += len(res.Hits)
			}
			b.StopTimer()
			if hits == 0 {
				b.Fatal("no hits: the corpus or the queries are wrong")
			}
			report(b, l)
		})
	}
}

// BenchmarkSearchKnowledgeByQuery breaks the stale figure down by query
// (q0 the commonest word … q6 a prefix), beside BenchmarkSearchBareMatchByQuery.
func BenchmarkSearchKnowledgeByQuery(b *testing.B) {
	n := fixture(b)
	for qi, q := range benchQueries() {
		b.Run(fmt.Sprintf("q%d", qi), func(b *testing.B) {
			l := make([]time.Duration, 0, b.N)
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := n.Pages().SearchKnowledge(bg, engine.ReadOptions{Level: engine.Stale}, kb.SearchQuery{Query: q, Limit: 10}); err != nil {
					b.Fatal(err)
				}
				l = append(l, time.Since(t0))
			}
			report(b, l)
		})
	}
}

// BenchmarkSearchBareMatch is the floor: the same phrases as a bare FTS5
// MATCH ranked by bm25, top 10 rowids, on the same database.
func BenchmarkSearchBareMatch(b *testing.B) { bareMatch(b, benchQueries()) }

// BenchmarkSearchBareMatchByQuery is the bare MATCH per query.
func BenchmarkSearchBareMatchByQuery(b *testing.B) {
	fixture(b)
	for qi, q := range benchQueries() {
		b.Run(fmt.Sprintf("q%d", qi), func(b *testing.B) { bareMatch(b, []string{q}) })
	}
}

func bareMatch(b *testing.B, qs []string) {
	n := fixture(b)
	quoted := make([]string, len(qs))
	for i, q := range qs {
		var ps []string
		for _, w := range strings.Fields(q) {
			if strings.HasSuffix(w, "*") {
				ps = append(ps, `"`+strings.TrimSuffix(w, "*")+`"*`)
			} else {
				ps = append(ps, `"`+w+`"`)
			}
		}
		quoted[i] = strings.Join(ps, " ")
	}
	st, err := n.DB().Prepare(`SELECT rowid FROM kb_pages_fts WHERE kb_pages_fts MATCH ? ORDER BY rank LIMIT 10`)
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	l := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		rows, err := st.Query(quoted[i%len(quoted)])
		if err != nil {
			b.Fatal(err)
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				b.Fatal(err)
			}
		}
		rows.Close()
		l = append(l, time.Since(t0))
	}
	b.StopTimer()
	report(b, l)
}
