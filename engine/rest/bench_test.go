package rest_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
)

// The read paths against the bare loops, in one run:
//
//	go test -run '^$' -bench . -benchtime 3000x ./engine/rest/
//
// Each reports p50 in µs; divide by BenchmarkBarePointSelect's and
// BenchmarkBareBarrierLoop's p50 of the same run for the ratios.

type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, "p99-µs")
}

func timed(b *testing.B, f func(i int)) {
	lat := make(latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f(i)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// bareDB is a SQLite file of 10 000 seven-column rows, opened the way the
// node opens its own.
func bareDB(b *testing.B) *sql.DB {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bare.db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE cp(id INTEGER PRIMARY KEY, seq INTEGER); INSERT INTO cp VALUES(1, 0);
		CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b TEXT, c INTEGER, d INTEGER, e TEXT, f TEXT)`); err != nil {
		b.Fatal(err)
	}
	tx, _ := db.Begin()
	for i := 0; i < 10000; i++ {
		tx.Exec(`INSERT INTO t VALUES(?,?,?,?,?,?,?)`, i, "title", "desc", i, i, "open", "x")
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return db
}

// BenchmarkBarePointSelect: one point select by primary key.
func BenchmarkBarePointSelect(b *testing.B) {
	db := bareDB(b)
	timed(b, func(i int) {
		var a string
		if err := db.QueryRow(`SELECT a FROM t WHERE id = ?`, i%10000).Scan(&a); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkBareBarrierLoop: publish a barrier (sync always), wait for a
// pull consumer to commit its checkpoint in SQLite, point select: what a
// linearizable read cannot do with less.
func BenchmarkBareBarrierLoop(b *testing.B) {
	dir := b.TempDir()
	br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "bare", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	ctx := context.Background()
	s, err := br.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	db := bareDB(b)
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bare", AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	applied := make(chan uint64, 1024)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			m, err := it.Next()
			if err != nil {
				return
			}
			md, _ := m.Metadata()
			tx, _ := db.Begin()
			tx.Exec(`UPDATE cp SET seq = ? WHERE id = 1`, md.Sequence.Stream)
			tx.Commit()
			applied <- md.Sequence.Stream
		}
	}()
	defer func() { it.Stop(); wg.Wait() }()
	timed(b, func(i int) {
		ack, err := br.JS.Publish(ctx, "bare.barrier", []byte(`{"kind":"barrier"}`))
		if err != nil {
			b.Fatal(err)
		}
		for seq := range applied {
			if seq >= ack.Sequence {
				break
			}
		}
		var a string
		if err := db.QueryRow(`SELECT a FROM t WHERE id = ?`, i%10000).Scan(&a); err != nil {
			b.Fatal(err)
		}
	})
}

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
	srv := httptest.NewServer(rest.Handler(rest.Config{Tracker: svc}))
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
	timed(b, func(int) {
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
	timed(b, func(int) {
		if _, err := r.n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Session, MinPosition: r.pos}, "ENG-1"); err != nil {
			b.Fatal(err)
		}
	})
}

// BenchmarkStaleReadREST: GET /api/v1/work-items/ENG-1 (stale by default)
// over loopback HTTP.
func BenchmarkStaleReadREST(b *testing.B) {
	r := newBenchRig(b)
	timed(b, func(int) { r.get(b, "/api/v1/work-items/ENG-1") })
}

// BenchmarkSessionReadREST: the same at session beside a reached
// min_position.
func BenchmarkSessionReadREST(b *testing.B) {
	r := newBenchRig(b)
	path := "/api/v1/work-items/ENG-1?read_level=session&min_position=" + r.pos.Token()
	timed(b, func(int) { r.get(b, path) })
}

// BenchmarkLinearizableREST: GET …?read_level=linearizable, p50 and
// reads/s at concurrency 1 and 64 (barriers coalesced).
func BenchmarkLinearizableREST(b *testing.B) {
	for _, conc := range []int{1, 64} {
		b.Run(fmt.Sprintf("c=%d", conc), func(b *testing.B) {
			r := newBenchRig(b)
			path := "/api/v1/work-items/ENG-1?read_level=linearizable"
			before := r.n.Tracker().Replica().BarrierAppends()
			per := (b.N + conc - 1) / conc
			lats := make([]latencies, conc)
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
			var all latencies
			for _, l := range lats {
				all = append(all, l...)
			}
			all.report(b)
			b.ReportMetric(float64(per*conc)/el.Seconds(), "reads/s")
			b.ReportMetric(float64(r.n.Tracker().Replica().BarrierAppends()-before)/float64(per*conc), "barriers/read")
		})
	}
}
