package node_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// Benchmarks report p50 in µs beside ns/op, so each figure can be put
// next to the bare loop measured in the same run:
//
//	go test -run '^$' -bench . -benchtime 2000x ./engine/node/

type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// bareRig is the raw loop the engine is measured against: an embedded
// broker syncing always, one stream, a pull consumer feeding one goroutine
// that commits a checkpoint row in SQLite, and a point select.
type bareRig struct {
	js      jetstream.JetStream
	db      *sql.DB
	applied chan uint64
	stop    func()
}

func newBareRig(b *testing.B) *bareRig {
	dir := b.TempDir()
	br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "bare", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := br.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(dir, "bare.db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	db.Exec(`CREATE TABLE cp(id INTEGER PRIMARY KEY, seq INTEGER); INSERT INTO cp VALUES(1, 0);
		CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b TEXT, c INTEGER, d INTEGER, e TEXT, f TEXT)`)
	tx, _ := db.Begin()
	for i := 0; i < 10000; i++ {
		tx.Exec(`INSERT INTO t VALUES(?,?,?,?,?,?,?)`, i, "title", "desc", i, i, "open", "x")
	}
	tx.Commit()
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bare", AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		b.Fatal(err)
	}
	r := &bareRig{js: br.JS, db: db, applied: make(chan uint64, 1024)}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
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
			r.applied <- md.Sequence.Stream
		}
	}()
	r.stop = func() { it.Stop(); wg.Wait(); db.Close(); br.Close() }
	return r
}

// BenchmarkBareBarrierLoop: publish a barrier, wait for the pull consumer
// to commit its checkpoint, point select.
func BenchmarkBareBarrierLoop(b *testing.B) {
	r := newBareRig(b)
	defer r.stop()
	ctx := context.Background()
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		ack, err := r.js.Publish(ctx, "bare.barrier", []byte(`{"kind":"barrier"}`))
		if err != nil {
			b.Fatal(err)
		}
		for seq := range r.applied {
			if seq >= ack.Sequence {
				break
			}
		}
		var title string
		if err := r.db.QueryRow(`SELECT a FROM t WHERE id = ?`, i%10000).Scan(&title); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkBarePublish: a bare synchronous publish, acknowledged, sync always.
func BenchmarkBarePublish(b *testing.B) {
	r := newBareRig(b)
	defer r.stop()
	ctx := context.Background()
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := r.js.Publish(ctx, fmt.Sprintf("bare.item.%d", i%100), []byte(`{"kind":"x","payload":{"title":"a title"}}`)); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
		<-r.applied
	}
	b.StopTimer()
	lat.report(b)
}

func benchNode(b *testing.B) *tracker.Service {
	n := enginetest.OpenNode(b, node.Config{})
	svc := n.Tracker()
	ctx := context.Background()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	if _, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "bench"}); err != nil {
		b.Fatal(err)
	}
	return svc
}

// BenchmarkLinearizableRead: get_work_item at linearizable, one reader.
func BenchmarkLinearizableRead(b *testing.B) {
	svc := benchNode(b)
	ctx := context.Background()
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := svc.GetWorkItem(ctx, lin(), "ENG-1"); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkLinearizableReadsParallel: reads/s at concurrency 1, 16 and 64,
// with barrier coalescing on and off.
func BenchmarkLinearizableReadsParallel(b *testing.B) {
	for _, coalesce := range []bool{true, false} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("coalesce=%v/c=%d", coalesce, conc), func(b *testing.B) {
				svc := benchNode(b)
				svc.Replica().SetCoalescing(coalesce)
				ctx := context.Background()
				before := svc.Replica().BarrierAppends()
				b.ResetTimer()
				t0 := time.Now()
				var wg sync.WaitGroup
				per := (b.N + conc - 1) / conc
				for w := 0; w < conc; w++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := 0; i < per; i++ {
							if _, err := svc.GetWorkItem(ctx, lin(), "ENG-1"); err != nil {
								b.Error(err)
								return
							}
						}
					}()
				}
				wg.Wait()
				el := time.Since(t0)
				b.StopTimer()
				b.ReportMetric(float64(per*conc)/el.Seconds(), "reads/s")
				b.ReportMetric(float64(svc.Replica().BarrierAppends()-before)/float64(per*conc), "barriers/read")
			})
		}
	}
}

// BenchmarkAppliedWrite: update_work_item until applied, one writer.
func BenchmarkAppliedWrite(b *testing.B) {
	svc := benchNode(b)
	ctx := context.Background()
	var lat latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr(fmt.Sprintf("t%d", i))})
		if err != nil || w.Outcome != engine.Applied {
			b.Fatal(w, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.report(b)
}

// BenchmarkBareMultiRowInsert: 1 000-row multi-row inserts, 4 000 rows a
// transaction, seven columns: the raw rate the drain is held against.
func BenchmarkBareMultiRowInsert(b *testing.B) {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "raw.db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	db.Exec(`CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b TEXT, c INTEGER, d INTEGER, e TEXT, f TEXT)`)
	stmt := `INSERT INTO t VALUES` + strings.TrimSuffix(strings.Repeat("(?,?,?,?,?,?,?),", 1000), ",")
	args := make([]any, 0, 7000)
	id := 0
	b.ResetTimer()
	t0 := time.Now()
	rows := 0
	for i := 0; i < b.N; i++ {
		tx, _ := db.Begin()
		for s := 0; s < 4; s++ {
			args = args[:0]
			for j := 0; j < 1000; j++ {
				id++
				args = append(args, id, "title", "description", id, id, "open", "assignee")
			}
			if _, err := tx.Exec(stmt, args...); err != nil {
				b.Fatal(err)
			}
		}
		tx.Commit()
		rows += 4000
	}
	b.ReportMetric(float64(rows)/time.Since(t0).Seconds(), "rows/s")
}

// BenchmarkApplyDrain: records put on the log while the node is down,
// then the time from opening the node to its applier having applied them
// all, less an open with nothing to apply. Each record writes an item row,
// its project's counter, an anchor and a ledger row: 4 rows.
func BenchmarkApplyDrain(b *testing.B) {
	const records = 10000
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir := b.TempDir()
		n := enginetest.OpenNode(b, node.Config{DataDir: dir})
		if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
			b.Fatal(err)
		}
		n.Close()
		// The records go on the log through a bare broker on the node's
		// store, so no applier runs while they are written.
		br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
		if err != nil {
			b.Fatal(err)
		}
		js, _ := jetstream.New(br.Conn, jetstream.WithPublishAsyncMaxPending(records+1))
		for j := 1; j <= records; j++ {
			op, _ := ledger.Mint(time.Now(), "create_work_item", "ENG")
			payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("wi_%d", j), "project": "ENG", "number": j, "title": "drained", "description": "", "status": "open", "assignee": ""})
			data, _ := record.Encode(&record.Record{Kind: tracker.KindCreateWorkItem, Version: 1, OpID: op.String(), Writer: "n1", Generation: 1,
				Subject: "crewlet.tracker.project.ENG", Payload: payload})
			if _, err := js.PublishAsync("crewlet.tracker.project.ENG", data, jetstream.WithMsgID(op.String())); err != nil {
				b.Fatal(err)
			}
		}
		<-js.PublishAsyncComplete()
		br.Close()
		n = enginetest.OpenNode(b, node.Config{DataDir: dir})
		b.StartTimer()
		// Timed from when the open returns: what the applier drains from
		// then on, over how long it takes.
		t0 := time.Now()
		from := n.Tracker().Replica().Applied()
		last := uint64(records + 1)
		if err := n.Tracker().Replica().WaitApplied(ctx, last); err != nil {
			b.Fatal(err)
		}
		took := time.Since(t0)
		b.StopTimer()
		n.Close()
		drained := float64(last - from)
		b.ReportMetric(drained*4/took.Seconds(), "rows/s")
		b.ReportMetric(drained, "records-timed")
	}
}
