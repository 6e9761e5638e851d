package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
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
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// Benchmarks report p50 in µs beside ns/op, so each figure can be put
// next to the bare loop measured in the same run:
//
//	go test -run '^$' -bench . -benchtime 2000x ./engine/node/

// BenchmarkBareBarrierLoop: publish a barrier, wait for the pull consumer
// to commit its checkpoint, point select.
func BenchmarkBareBarrierLoop(b *testing.B) { enginetest.BareBarrierLoop(b) }

// BenchmarkBarePublish: a bare synchronous publish, acknowledged, sync always.
func BenchmarkBarePublish(b *testing.B) {
	r := enginetest.NewBareRig(b)
	ctx := context.Background()
	enginetest.Timed(b, func(i int) {
		if _, err := r.JS.Publish(ctx, fmt.Sprintf("bare.item.%d", i%100), []byte(`{"kind":"x","payload":{"title":"a title"}}`)); err != nil {
			b.Fatal(err)
		}
	})
}

func benchNode(b *testing.B) *tracker.Service {
	return seedBenchNode(b, enginetest.OpenNode(b, node.Config{}))
}

// seedBenchNode makes project ENG with one item on n.
func seedBenchNode(b *testing.B, n *node.Node) *tracker.Service {
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
	var lat enginetest.Latencies
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		if _, err := svc.GetWorkItem(ctx, lin(), "ENG-1"); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b)
}

// BenchmarkLinearizableReadsParallel: reads/s at concurrency 1, 16 and 64,
// with barrier coalescing on and off.
func BenchmarkLinearizableReadsParallel(b *testing.B) {
	for _, coalesce := range []bool{true, false} {
		for _, conc := range []int{1, 16, 64} {
			b.Run(fmt.Sprintf("coalesce=%v/c=%d", coalesce, conc), func(b *testing.B) {
				svc := benchNode(b)
				svc.Replica().(*statelog.Replica).SetCoalescing(coalesce)
				ctx := context.Background()
				before := svc.Replica().(*statelog.Replica).Stats().BarrierAppends
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
				b.ReportMetric(float64(svc.Replica().(*statelog.Replica).Stats().BarrierAppends-before)/float64(per*conc), "barriers/read")
			})
		}
	}
}

// BenchmarkLinearizableReadsCoalescing: reads/s at concurrency 64 with
// coalescing on and off on one node, in alternating rounds (b.N reads
// per mode in all, eight rounds of each), so a machine whose load drifts
// during the run weighs on both figures alike; reports both rates, their
// ratio (the goal is ≥ 10×) and the reads that shared each barrier.
//
//	go test -run '^$' -bench LinearizableReadsCoalescing -benchtime 8000x ./engine/node/
func BenchmarkLinearizableReadsCoalescing(b *testing.B) {
	const conc, rounds = 64, 8
	svc := benchNode(b)
	rep := svc.Replica().(*statelog.Replica)
	ctx := context.Background()
	per := max(1, b.N/(conc*rounds))
	var took [2]time.Duration
	var barriers uint64
	b.ResetTimer()
	for r := 0; r < 2*rounds; r++ {
		on := r%2 == 0
		rep.SetCoalescing(on)
		before := rep.Stats().BarrierAppends
		el := parallel(conc, per, func(int, int) {
			if _, err := svc.GetWorkItem(ctx, lin(), "ENG-1"); err != nil {
				b.Error(err)
			}
		})
		if on {
			took[0] += el
			barriers += rep.Stats().BarrierAppends - before
		} else {
			took[1] += el
		}
	}
	b.StopTimer()
	reads := float64(per * conc * rounds)
	b.ReportMetric(reads/took[0].Seconds(), "coalesced-reads/s")
	b.ReportMetric(reads/took[1].Seconds(), "uncoalesced-reads/s")
	b.ReportMetric(took[1].Seconds()/took[0].Seconds(), "ratio")
	b.ReportMetric(reads/float64(barriers), "reads/barrier")
}

// BenchmarkAppliedWrite: update_work_item until applied, one writer, and
// the mean time a write spent deciding, appending and settling.
func BenchmarkAppliedWrite(b *testing.B) {
	n := enginetest.OpenNode(b, node.Config{})
	svc := seedBenchNode(b, n)
	ctx := context.Background()
	var lat enginetest.Latencies
	b.ResetTimer()
	phases := enginetest.WritePhases(string(engine.DomainTracker), n.Metrics())
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		w, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr(fmt.Sprintf("t%d", i))})
		if err != nil || w.Outcome != engine.Applied {
			b.Fatal(w, err)
		}
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b)
	enginetest.ReportWritePhases(b, phases, enginetest.WritePhases(string(engine.DomainTracker), n.Metrics()))
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
// all, less the time an open with nothing to apply takes (the node opened
// again at once). Each record writes an item row, its project's counter,
// an anchor and a ledger row: 4 rows.
// cpu-µs/record is the process's CPU time over the same span, less the
// empty open's: steadier than the rate on a machine whose other tenants
// take a varying share of the cores. Timing from when the open returned
// instead missed whatever the applier drained during the open, which on
// a quick run was all of it.
func BenchmarkApplyDrain(b *testing.B) {
	const records = 10000
	var drained float64
	var took, cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, from := drainFixture(b)
		putDrainRecords(b, dir, records)
		last := from + records
		t, c := timeDrain(b, dir, last)
		took, cpu = took+t, cpu+c
		drained += float64(last - from)
	}
	b.ReportMetric(drained*4/took.Seconds(), "rows/s")
	b.ReportMetric(float64(cpu.Microseconds())/drained, "cpu-µs/record")
	b.ReportMetric(drained/float64(b.N), "records/op")
}

// BenchmarkApplyDrainUpdates: as BenchmarkApplyDrain (timeDrain), but
// what the node drains is 5 000 title edits of its 2 000 items, in an
// order drawn once (the items' docs rise and fall within a batch), on top
// of the creates it applied before it closed. Each edit writes the item's row, a history
// row, its search posting, an anchor and a ledger row.
func BenchmarkApplyDrainUpdates(b *testing.B) {
	const items, edits = 2000, 5000
	ctx := context.Background()
	var drained float64
	var took, cpu time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		dir, from := drainFixture(b)
		from += items
		putDrainRecords(b, dir, items)
		n := enginetest.OpenNode(b, node.Config{DataDir: dir})
		if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, from); err != nil {
			b.Fatal(err)
		}
		n.Close()
		putDrainEdits(b, dir, items, edits)
		t, c := timeDrain(b, dir, from+edits)
		took, cpu = took+t, cpu+c
		drained += edits
	}
	b.ReportMetric(drained/took.Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Microseconds())/drained, "cpu-µs/record")
}

// timeDrain opens the node of dir, with the timer running, until its
// tracker applied through last, and answers the time and the process's
// CPU that took, less what an open with nothing to apply takes (the node
// opened again at once). It is called, and returns, with the timer
// stopped.
func timeDrain(b *testing.B, dir string, last uint64) (took, cpu time.Duration) {
	b.StartTimer()
	t0, c0 := time.Now(), enginetest.CPUTime()
	n := enginetest.OpenNode(b, node.Config{DataDir: dir})
	if err := n.Replica(engine.DomainTracker).WaitApplied(context.Background(), last); err != nil {
		b.Fatal(err)
	}
	full, fullCPU := time.Since(t0), enginetest.CPUTime()-c0
	b.StopTimer()
	n.Close()
	t1, c1 := time.Now(), enginetest.CPUTime()
	enginetest.OpenNode(b, node.Config{DataDir: dir}).Close()
	return full - time.Since(t1), fullCPU - (enginetest.CPUTime() - c1)
}

// putDrainEdits appends edits title edits of the items putDrainRecords
// filed (wi_1 … wi_items), in an order drawn from a fixed seed, through a
// bare broker on the node's store.
func putDrainEdits(b *testing.B, dir string, items, edits int) {
	rng := rand.New(rand.NewPCG(1, 2))
	putDrain(b, dir, edits, func(j int) (string, *record.Record) {
		id := fmt.Sprintf("wi_%d", 1+rng.IntN(items))
		op, _ := ledger.MintFor(time.Now(), "update_work_item", id, "")
		title := fmt.Sprintf("edited %d", j)
		payload, _ := json.Marshal(trackrec.UpdateWorkItem{ID: id, Title: &title})
		return op.String(), &record.Record{Kind: trackrec.KindUpdateWorkItem, Subject: trackrec.ItemSubject(id), Payload: payload}
	})
}

// drainFixture is the data directory of a node that filed project ENG and
// closed, and the sequence it applied through.
func drainFixture(b *testing.B) (string, uint64) {
	dir := b.TempDir()
	n := enginetest.OpenNode(b, node.Config{DataDir: dir})
	defer n.Close()
	if _, err := n.Tracker().CreateProject(context.Background(), engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		b.Fatal(err)
	}
	return dir, n.Replica(engine.DomainTracker).Applied()
}

// putDrainRecords appends records creates to the log of the node whose
// data directory is dir, through a bare broker on its store, so no
// applier runs while they are written.
func putDrainRecords(b *testing.B, dir string, records int) {
	putDrain(b, dir, records, func(j int) (string, *record.Record) {
		op, _ := ledger.MintFor(time.Now(), "create_work_item", "ENG", "")
		payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("wi_%d", j), "project": "ENG", "number": j, "title": "drained", "description": "", "status": "open", "assignee": ""})
		return op.String(), &record.Record{Kind: trackrec.KindCreateWorkItem, Subject: "crewlet.tracker.project.ENG", Payload: payload}
	})
}

// putDrain appends n records, the jth (from 1) made by next with its op
// id, written by n1 at generation 1, through a bare broker on the store of
// the node whose data directory is dir.
func putDrain(b *testing.B, dir string, n int, next func(j int) (string, *record.Record)) {
	br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(dir, "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		b.Fatal(err)
	}
	defer br.Close()
	js, _ := jetstream.New(br.Conn, jetstream.WithPublishAsyncMaxPending(n+1))
	for j := 1; j <= n; j++ {
		op, rec := next(j)
		rec.Version, rec.OpID, rec.Writer, rec.Generation = 1, op, "n1", 1
		data, _ := record.Encode(rec)
		if _, err := js.PublishAsync(rec.Subject, data, jetstream.WithMsgID(op)); err != nil {
			b.Fatal(err)
		}
	}
	<-js.PublishAsyncComplete()
}

// BenchmarkCreatesOneProject: create_work_item into one project at
// concurrency 1, 16 and 64, with the outcomes counted (conflict must stay
// 0: a create is a record about its new item and takes its number at
// apply time), beside bare publishes at the same concurrency measured in
// the same run.
//
//	go test -run '^$' -bench CreatesOneProject -benchtime 2000x ./engine/node/
func BenchmarkCreatesOneProject(b *testing.B) {
	for _, conc := range []int{1, 16, 64} {
		for _, single := range []bool{true, false} {
			b.Run(fmt.Sprintf("c=%d/single=%v", conc, single), func(b *testing.B) { benchCreates(b, conc, single) })
		}
	}
}

// benchCreates is one case of BenchmarkCreatesOneProject: single sends
// every append alone, never combined into a batch.
func benchCreates(b *testing.B, conc int, single bool) {
	n := enginetest.OpenNode(b, node.Config{SingleAppends: single})
	svc := seedBenchNode(b, n)
	bare := enginetest.NewBareRig(b)
	ctx := context.Background()
	var mu sync.Mutex
	outcomes := map[string]int{}
	per := (b.N + conc - 1) / conc
	b.ResetTimer()
	c0 := enginetest.CPUTime()
	el := parallel(conc, per, func(w, i int) {
		r, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("w%d-%d", w, i)})
		k := string(r.Outcome)
		if err != nil {
			k = string(engine.CodeOf(err))
		}
		mu.Lock()
		outcomes[k]++
		mu.Unlock()
	})
	b.StopTimer()
	c1 := enginetest.CPUTime()
	bareEl := parallel(conc, per, func(w, i int) {
		if _, err := bare.JS.Publish(ctx, fmt.Sprintf("bare.item.%d", w), []byte(`{"kind":"x","payload":{"title":"a title"}}`)); err != nil {
			b.Error(err)
		}
	})
	c2 := enginetest.CPUTime()
	total := float64(per * conc)
	// The CPU each create and each bare publish cost the process, and the
	// cores the creates kept busy: a rate taken with the cores saturated
	// is a CPU cost, not a latency.
	b.ReportMetric(float64((c1-c0).Microseconds())/total, "cpu-µs/create")
	b.ReportMetric(float64((c2-c1).Microseconds())/total, "bare-cpu-µs/publish")
	b.ReportMetric((c1-c0).Seconds()/el.Seconds(), "cores-busy")
	b.ReportMetric(total/el.Seconds(), "creates/s")
	b.ReportMetric(total/bareEl.Seconds(), "bare_publishes/s")
	b.ReportMetric(float64(n.Log(engine.DomainTracker).Batches().Taken), "batches")
	b.ReportMetric(float64(n.Log(engine.DomainTracker).Batches().Refused), "refused")
	b.ReportMetric(float64(n.Log(engine.DomainTracker).Batches().Records), "batched")
	b.ReportMetric(bareEl.Seconds()/el.Seconds(), "ratio")
	b.ReportMetric(float64(outcomes[string(engine.CodeConflict)]), "conflicts")
	b.ReportMetric(float64(outcomes[string(engine.Applied)]), "applied")
	b.ReportMetric(float64(outcomes[string(engine.Pending)]), "pending")
	if outcomes[string(engine.CodeConflict)] > 0 {
		b.Errorf("creates refused conflict: %v", outcomes)
	}
}

// parallel runs f(worker, i) per times on each of conc workers and
// returns the wall time.
func parallel(conc, per int, f func(w, i int)) time.Duration {
	t0 := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < conc; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < per; i++ {
				f(w, i)
			}
		}()
	}
	wg.Wait()
	return time.Since(t0)
}
