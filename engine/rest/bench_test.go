package rest_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/tracker"
)

// The read paths against the bare loops, in one run:
//
//	go test -run '^$' -bench . -benchtime 3000x ./engine/rest/
//
// Each reports p50 in µs; divide by BenchmarkBarePointSelect's and
// BenchmarkBareBarrierLoop's p50 of the same run for the ratios.

// BenchmarkBarePointSelect: one point select by primary key.
func BenchmarkBarePointSelect(b *testing.B) {
	db := enginetest.BareDB(b)
	enginetest.Timed(b, func(i int) {
		var a string
		if err := db.QueryRow(`SELECT a FROM t WHERE id = ?`, i%10000).Scan(&a); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBareBarrierLoop: publish a barrier (sync always), wait for a
// pull consumer to commit its checkpoint in SQLite, point select: what a
// linearizable read cannot do with less.
func BenchmarkBareBarrierLoop(b *testing.B) { enginetest.BareBarrierLoop(b) }

type benchRig struct {
	n   *node.Node
	srv *httptest.Server
	pos *engine.Position
	cl  *http.Client
}

func newBenchRig(b *testing.B) *benchRig {
	n := enginetest.OpenNode(b, node.Config{})
	ctx := context.Background()
	svc := n.Tracker()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	p, err := engine.ParsePosition(w.Position)
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(rest.Handler(rest.Config{Routes: rest.RoutesOf(svc)}))
	b.Cleanup(srv.Close)
	tr := &http.Transport{MaxIdleConnsPerHost: 128}
	return &benchRig{n: n, srv: srv, pos: &p, cl: &http.Client{Transport: tr}}
}

func (r *benchRig) get(b *testing.B, path string) {
	resp, err := r.cl.Get(r.srv.URL + path)
	if err != nil {
		b.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		b.Fatalf("GET %s: %d", path, resp.StatusCode)
	}
}

// BenchmarkStaleReadEngine: get_work_item at stale, at the engine
// (the page's goal: p50 at most 50 µs).
func BenchmarkStaleReadEngine(b *testing.B) {
	r := newBenchRig(b)
	ctx := context.Background()
	enginetest.Timed(b, func(int) {
		if _, err := r.n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, "ENG-1"); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkSessionReadEngine: get_work_item at session with a position
// this node has reached.
func BenchmarkSessionReadEngine(b *testing.B) {
	r := newBenchRig(b)
	ctx := context.Background()
	enginetest.Timed(b, func(int) {
		if _, err := r.n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Session, MinPosition: r.pos}, "ENG-1"); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkStaleReadREST: GET /api/v1/work-items/ENG-1 (stale by default)
// over loopback HTTP.
func BenchmarkStaleReadREST(b *testing.B) {
	r := newBenchRig(b)
	enginetest.Timed(b, func(int) { r.get(b, "/api/v1/work-items/ENG-1") })
}

// BenchmarkSessionReadREST: the same at session beside a reached
// min_position.
func BenchmarkSessionReadREST(b *testing.B) {
	r := newBenchRig(b)
	path := "/api/v1/work-items/ENG-1?read_level=session&min_position=" + r.pos.Token()
	enginetest.Timed(b, func(int) { r.get(b, path) })
}

// BenchmarkLinearizableREST: GET …?read_level=linearizable, p50 and
// reads/s at concurrency 1 and 64 (barriers coalesced).
func BenchmarkLinearizableREST(b *testing.B) {
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			r := newBenchRig(b)
			path := "/api/v1/work-items/ENG-1?read_level=linearizable"
			before := r.n.Replica(engine.DomainTracker).Stats().BarrierAppends
			per := (b.N + conc - 1) / conc
			lats := make([]enginetest.Latencies, conc)
			var wg sync.WaitGroup
			b.ResetTimer()
			t0 := time.Now()
			for w := 0; w < conc; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < per; i++ {
						s := time.Now()
						r.get(b, path)
						lats[w] = append(lats[w], time.Since(s))
					}
				}()
			}
			wg.Wait()
			el := time.Since(t0)
			b.StopTimer()
			var all enginetest.Latencies
			for _, l := range lats {
				all = append(all, l...)
			}
			all.Report(b)
			b.ReportMetric(float64(per*conc)/el.Seconds(), "reads/s")
			b.ReportMetric(float64(r.n.Replica(engine.DomainTracker).Stats().BarrierAppends-before)/float64(per*conc), "barriers/read")
		})
	}
}

// BenchmarkStaleReads: one stale read of one item four ways, interleaved
// in one loop so each is measured under the same load — a bare SELECT of
// one row on the node's database, get_work_item at stale at the engine, a
// bare HTTP GET of /healthz on the same server, and GET
// /api/v1/work-items/ENG-1 — reporting each p50 in µs and the goals'
// ratios (engine ≤ 50 µs; REST ≤ 3× the engine):
//
//	go test -run '^$' -bench StaleReads -benchtime 3000x ./engine/rest/
func BenchmarkStaleReads(b *testing.B) {
	r := newBenchRig(b)
	ctx := context.Background()
	mux := http.NewServeMux()
	mux.Handle("/api/v1/", rest.Handler(rest.Config{Routes: rest.RoutesOf(r.n.Tracker())}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	srv := httptest.NewServer(mux)
	b.Cleanup(srv.Close)
	r.srv = srv
	db := r.n.DB()
	var bare, eng, health, api enginetest.Latencies
	lap := func(l *enginetest.Latencies, f func()) {
		t0 := time.Now()
		f()
		*l = append(*l, time.Since(t0))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		lap(&bare, func() {
			var title string
			if err := db.QueryRow(`SELECT title FROM tracker_items WHERE key = ?`, "ENG-1").Scan(&title); err != nil {
				b.Fatal(err)
			}
		})
		lap(&eng, func() {
			if _, err := r.n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, "ENG-1"); err != nil {
				b.Fatal(err)
			}
		})
		lap(&health, func() { r.get(b, "/healthz") })
		lap(&api, func() { r.get(b, "/api/v1/work-items/ENG-1") })
	}
	b.StopTimer()
	p := func(l enginetest.Latencies) float64 {
		slices.Sort(l)
		return float64(l[len(l)/2].Nanoseconds()) / 1e3
	}
	pb, pe, ph, pa := p(bare), p(eng), p(health), p(api)
	b.ReportMetric(pb, "bare-select-p50-µs")
	b.ReportMetric(pe, "engine-p50-µs")
	b.ReportMetric(ph, "bare-healthz-p50-µs")
	b.ReportMetric(pa, "rest-p50-µs")
	b.ReportMetric(pe/pb, "engine/bare")
	b.ReportMetric(pa/pe, "rest/engine")
	b.ReportMetric(pa/ph, "rest/healthz")
}
