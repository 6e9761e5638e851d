package vectors

import (
	"container/heap"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/semantic"
)

// words make the synthetic corpus of the index benchmark: titles of
// three to eight of them, so the vectors spread as a tracker's do.
var benchWords = []string{"login", "password", "export", "report", "slow", "dashboard", "crash", "upload", "photo", "invoice",
	"billing", "search", "sidebar", "theme", "webhook", "retry", "memory", "worker", "timezone", "calendar", "invite", "email",
	"notification", "api", "limit", "delete", "archive", "project", "board", "card", "filter", "sort", "mobile", "android",
	"ios", "safari", "chart", "import", "csv", "excel", "permission", "role", "token", "session", "cookie", "backup", "database",
	"migration", "queue", "cron", "deploy", "release", "certificate", "proxy", "network", "cache", "latency", "comment", "editor"}

// syntheticTexts are n titles of 3 to 8 words drawn at random (a fixed
// seed) from benchWords: few of them alike, as a tracker's titles are.
func syntheticTexts(n int) []string {
	r := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var t []string
		for range 3 + r.IntN(6) {
			t = append(t, benchWords[r.IntN(len(benchWords))])
		}
		out[i] = strings.Join(t, " ")
	}
	return out
}

// bareScan is the same search without the index: every float32 vector
// scanned, the k best kept.
func bareScan(vecs [][]float32, q []float32, k int) []int {
	h := make(hits, 0, k)
	for i, v := range vecs {
		s := embed.Dot(q, v)
		if len(h) < k {
			heap.Push(&h, hit{i, s})
		} else if s > h[0].score {
			h[0] = hit{i, s}
			heap.Fix(&h, 0)
		}
	}
	out := make([]int, len(h))
	for i, c := range h {
		out[i] = c.i
	}
	return out
}

// BenchmarkNearest100k: the index's nearest-neighbour scan (int8 codes)
// beside a bare float32 scan of the same 100 000 vectors, p50 of each and
// their ratio, in one run; and how many of the exact top 10 the index
// finds (recall@10 of the quantisation).
//
//	go test ./engine/vectors -run '^$' -bench Nearest100k -benchtime 1x
func BenchmarkNearest100k(b *testing.B) {
	const n, k = 100_000, 10
	e := embed.NewBuiltin()
	vecs, err := e.Embed(context.Background(), syntheticTexts(n))
	if err != nil {
		b.Fatal(err)
	}
	idx := newIndex(e.Model(), e.Dims())
	for i, v := range vecs {
		idx.put(fmt.Sprintf("wi_%d", i), meta{kind: semantic.WorkItem, model: e.Model()}, v)
	}
	queries, _ := e.Embed(context.Background(), []string{"slow dashboard export", "login token session", "crash photo upload mobile",
		"invoice billing email", "deploy release certificate", "calendar timezone invite", "search filter sort board", "memory worker queue"})
	for b.Loop() {
		var tIdx, tBare []time.Duration
		agree, total := 0, 0
		for r := 0; r < 5; r++ {
			for _, q := range queries {
				start := time.Now()
				got := idx.nearest(q, []semantic.Kind{semantic.WorkItem}, k)
				tIdx = append(tIdx, time.Since(start))
				start = time.Now()
				exact := bareScan(vecs, q, k)
				tBare = append(tBare, time.Since(start))
				if r == 0 {
					in := map[string]bool{}
					for _, h := range got {
						in[h.ID] = true
					}
					for _, i := range exact {
						total++
						if in[fmt.Sprintf("wi_%d", i)] {
							agree++
						}
					}
				}
			}
		}
		pi, pb := p50(tIdx), p50(tBare)
		b.ReportMetric(float64(pi.Microseconds())/1000, "index-p50-ms")
		b.ReportMetric(float64(pb.Microseconds())/1000, "bare-p50-ms")
		b.ReportMetric(float64(pi)/float64(pb), "index/bare")
		b.ReportMetric(float64(agree)/float64(total), "recall@10")
	}
}

func p50(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}
