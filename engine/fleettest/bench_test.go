//go:build integration

package fleettest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/metrics"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Benchmarks on a three-node R3 cluster on loopback:
//
//	go test -run '^$' -bench . -benchtime 500x ./engine/fleettest/

func p50(l []time.Duration) time.Duration {
	slices.Sort(l)
	return l[len(l)/2]
}

// trackerLeader names the node leading the tracker stream.
func trackerLeader(b *testing.B, c *fleettest.Cluster) string {
	s, err := c.Node(0).Broker().JS.Stream(context.Background(), engine.StreamTracker)
	if err != nil {
		b.Fatal(err)
	}
	return s.CachedInfo().Cluster.Leader
}

// leadBy moves the leadership of stream to the node named want, asking its
// current leader to step down in its favour.
func leadBy(b *testing.B, n *node.Node, stream, current, want string) {
	ctx := context.Background()
	for i := 0; current != want; i++ {
		if i == 20 {
			b.Fatalf("%s is still led by %s, not %s", stream, current, want)
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]any{"preferred": want}})
		if _, err := n.Broker().Conn.Request("$JS.API.STREAM.LEADER.STEPDOWN."+stream, req, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
		s, err := n.Broker().JS.Stream(ctx, stream)
		if err != nil {
			b.Fatal(err)
		}
		current = s.CachedInfo().Cluster.Leader
	}
}

// leadReaderBy moves the leadership of stream's consumer to n's own
// server.
func leadReaderBy(b *testing.B, n *node.Node, stream, consumer string) {
	ctx := context.Background()
	for i := 0; ; i++ {
		c, err := n.Broker().JS.Consumer(ctx, stream, consumer)
		if err != nil {
			b.Fatal(err)
		}
		if c.CachedInfo().Cluster.Leader == n.Name() {
			return
		}
		if i == 20 {
			b.Fatalf("%s/%s is still led by %s, not %s", stream, consumer, c.CachedInfo().Cluster.Leader, n.Name())
		}
		req, _ := json.Marshal(map[string]any{"placement": map[string]any{"preferred": n.Name()}})
		if _, err := n.Broker().Conn.Request("$JS.API.CONSUMER.LEADER.STEPDOWN."+stream+"."+consumer, req, 5*time.Second); err != nil {
			b.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// follower is a node that does not lead the tracker stream.
func follower(b *testing.B, c *fleettest.Cluster) *node.Node {
	leader := trackerLeader(b, c)
	for i := 0; i < c.Size(); i++ {
		if c.Node(i).Name() != leader {
			return c.Node(i)
		}
	}
	b.Fatal("no follower")
	return nil
}

// bareLoop is the loop a linearizable read is measured against, on node
// n: an R3 stream (name, on subjects prefix.>) led by the tracker
// stream's leader, a pull consumer on n committing each sequence to a
// checkpoint row in SQLite and telling applied. Without acked, the
// consumer is a group on the stream's replicas led by n's server that
// takes no acks; with acked it is made as n's own reader is — one
// replica on n's server — and acknowledges each record after its commit
// (ack-all). The consumer stops, and the database closes, when the
// benchmark's run ends.
func bareLoop(b *testing.B, c *fleettest.Cluster, n *node.Node, name, prefix string, acked bool) chan uint64 {
	ctx := context.Background()
	js := n.Broker().JS
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: name, Subjects: []string{prefix + ".>"}, Storage: jetstream.FileStorage, Replicas: 3})
	if err != nil {
		b.Fatal(err)
	}
	db, err := sqlite.Open(filepath.Join(b.TempDir(), name+".db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE cp(id INTEGER PRIMARY KEY, seq INTEGER); INSERT INTO cp VALUES(1, 0)`); err != nil {
		b.Fatal(err)
	}
	// The bare stream is led by the tracker stream's leader, so both
	// loops cross the same links from the same follower.
	leadBy(b, n, name, s.CachedInfo().Cluster.Leader, trackerLeader(b, c))
	var cons jetstream.Consumer
	if acked {
		// Like n's own reader: one replica on n's server, acknowledged.
		cons = ownBareReader(b, n, s)
	} else {
		cons, err = s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bare", AckPolicy: jetstream.AckNonePolicy})
		if err != nil {
			b.Fatal(err)
		}
		// Led by n's own server, as a group reader's lead is claimed
		// (broker.claimReader).
		leadReaderBy(b, n, name, "bare")
	}
	applied := make(chan uint64, 1)
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				continue // a missed heartbeat: the iterator re-pulls on its own
			}
			if err != nil {
				return
			}
			md, _ := m.Metadata()
			if _, err := db.Exec(`UPDATE cp SET seq = ? WHERE id = 1`, md.Sequence.Stream); err != nil {
				return
			}
			if acked {
				_ = m.Ack()
			}
			applied <- md.Sequence.Stream
		}
	}()
	b.Cleanup(it.Stop)
	return applied
}

// ownBareReader makes the bare loop's acknowledging consumer as a node
// makes its own reader (broker's place.go): one replica, made again until
// the broker puts it on n's server.
func ownBareReader(b *testing.B, n *node.Node, s jetstream.Stream) jetstream.Consumer {
	ctx := context.Background()
	for i := 0; i < 64; i++ {
		cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bare", AckPolicy: jetstream.AckAllPolicy, Replicas: 1})
		if err != nil {
			b.Fatal(err)
		}
		if ci := cons.CachedInfo().Cluster; ci != nil && ci.Leader == n.Name() {
			return cons
		}
		if err := s.DeleteConsumer(ctx, "bare"); err != nil {
			b.Fatal(err)
		}
	}
	b.Fatalf("the bare reader never landed on %s", n.Name())
	return nil
}

// bareRound publishes on subject and waits for applied to tell it.
func bareRound(b *testing.B, js jetstream.JetStream, subject string, applied chan uint64) time.Duration {
	t0 := time.Now()
	ack, err := js.Publish(context.Background(), subject, []byte("x"))
	if err != nil {
		b.Fatal(err)
	}
	for seq := range applied {
		if seq >= ack.Sequence {
			break
		}
	}
	return time.Since(t0)
}

// followerRig starts a three-node fleet and files one item; n is a node
// that does not lead the tracker stream, key the item's.
func followerRig(b *testing.B) (c *fleettest.Cluster, n *node.Node, key string) {
	c = fleettest.StartCluster(b, fleettest.Options{})
	n = follower(b, c)
	ctx := context.Background()
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "BEN", "Bench"); err != nil {
		b.Fatal(err)
	}
	iw, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "BEN", Title: "x"})
	if err != nil {
		b.Fatal(err)
	}
	return c, n, iw.Item.Key
}

// BenchmarkFollowerLinearizableRead: get_work_item at linearizable on a
// follower of the R3 tracker stream, against the bare loop on the same
// cluster and node: a publish on an R3 stream, a pull consumer on that
// node, a checkpoint row committed in SQLite, the publisher told. Reports
// both p50s and their ratio (the goal is ≤ 1.3× bare), and the ratio to
// the same loop with an acknowledging consumer like the node's own.
func BenchmarkFollowerLinearizableRead(b *testing.B) {
	c, n, key := followerRig(b)
	ctx := context.Background()

	// The bare loops.
	js := n.Broker().JS
	applied := bareLoop(b, c, n, "BARE", "bare", false)
	appliedAcked := bareLoop(b, c, n, "BAREACK", "bareack", true)

	bare := make([]time.Duration, 0, b.N)
	acked := make([]time.Duration, 0, b.N)
	lin := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bare = append(bare, bareRound(b, js, "bare.x", applied))
		acked = append(acked, bareRound(b, js, "bareack.x", appliedAcked))
		t0 := time.Now()
		if _, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, key); err != nil {
			b.Fatal(err)
		}
		lin = append(lin, time.Since(t0))
	}
	b.StopTimer()
	pb, pa, pl := p50(bare), p50(acked), p50(lin)
	b.ReportMetric(float64(pb.Microseconds()), "bare-p50-µs")
	b.ReportMetric(float64(pa.Microseconds()), "bare-acked-p50-µs")
	b.ReportMetric(float64(pl.Microseconds()), "linearizable-p50-µs")
	b.ReportMetric(float64(pl)/float64(pb), "ratio-to-bare")
	b.ReportMetric(float64(pl)/float64(pa), "ratio-to-acked-bare")
}

// BenchmarkFollowerLinearizablePhases: where a follower's linearizable
// read goes, each phase timed on its own beside the bare loop (no acked
// loop between them): the barrier's append (until the broker's ack), the
// wait for this node's applier to pass it, and the read of the row; then
// a whole linearizable read.
func BenchmarkFollowerLinearizablePhases(b *testing.B) {
	c, n, key := followerRig(b)
	ctx := context.Background()
	applied := bareLoop(b, c, n, "BARE", "bare", false)
	r := n.Replica(engine.DomainTracker)
	var bare, barrier, apply, read, lin []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		bare = append(bare, bareRound(b, n.Broker().JS, "bare.x", applied))
		t0 := time.Now()
		seq, err := r.Barrier(ctx)
		if err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		for r.Applied() < seq {
			time.Sleep(20 * time.Microsecond)
		}
		t2 := time.Now()
		if _, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, key); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if _, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, key); err != nil {
			b.Fatal(err)
		}
		barrier, apply = append(barrier, t1.Sub(t0)), append(apply, t2.Sub(t1))
		read, lin = append(read, t3.Sub(t2)), append(lin, time.Since(t3))
	}
	b.StopTimer()
	for _, m := range []struct {
		unit string
		l    []time.Duration
	}{{"bare-p50-µs", bare}, {"barrier-p50-µs", barrier}, {"apply-p50-µs", apply}, {"read-p50-µs", read}, {"linearizable-p50-µs", lin}} {
		b.ReportMetric(float64(p50(m.l).Microseconds()), m.unit)
	}
	b.ReportMetric(float64(p50(lin))/float64(p50(bare)), "ratio-to-bare")
}

// BenchmarkAppliedWritesConcurrency64: 64 writers spread over the three
// nodes, each updating its own work item (no if_match contention);
// reports applied writes per second beside the bare limit measured in the
// same run on the same cluster: 64 writers publishing synchronously to an
// R3 stream of their own, spread over the same three nodes' connections.
// Also the mean time a write spent deciding, appending and settling.
func BenchmarkAppliedWritesConcurrency64(b *testing.B) {
	// Each node's reader as it runs (one replica on the node's own
	// server), and as a group on the stream's replicas, in one run.
	b.Run("readers=own", func(b *testing.B) { appliedWrites64(b, false) })
	b.Run("readers=group", func(b *testing.B) { appliedWrites64(b, true) })
}

func appliedWrites64(b *testing.B, groupReaders bool) {
	c := fleettest.StartCluster(b, fleettest.Options{Configure: func(_ int, cfg *node.Config) { cfg.GroupReaders = groupReaders }})
	ctx := context.Background()
	if _, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "BEN", "Bench"); err != nil {
		b.Fatal(err)
	}
	const workers = 64
	keys := make([]string, workers)
	for i := range keys {
		iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "BEN", Title: "x"})
		if err != nil {
			b.Fatal(err)
		}
		keys[i] = iw.Item.Key
	}
	if _, err := c.Node(0).Broker().JS.CreateStream(ctx, jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare.>"},
		Storage: jetstream.FileStorage, Replicas: 3}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	bare, _, bareCPU, _ := byWorkers(b.N, workers, func(w int) bool {
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		_, err := c.Node(w%c.Size()).Broker().JS.Publish(pctx, fmt.Sprintf("bare.%d", w), []byte("x"))
		return err == nil
	})
	n0, d0 := fleetBatches(c)
	before := fleetWritePhases(c)
	applied, other, writeCPU, cores := byWorkers(b.N, workers, func(w int) bool {
		title := fmt.Sprint(w)
		// Bounded: a write that never answers is counted, not waited for.
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := c.Node(w%c.Size()).Tracker().UpdateWorkItem(wctx, engine.WriteOptions{}, keys[w], 0, tracker.ItemPatch{Title: &title})
		return err == nil && r.Outcome == engine.Applied
	})
	b.StopTimer()
	n1, d1 := fleetBatches(c)
	b.ReportMetric(bare, "bare-publishes/s")
	b.ReportMetric(applied, "applied-writes/s")
	b.ReportMetric(float64(d1-d0)/float64(max(1, n1-n0)), "records/apply")
	b.ReportMetric(applied/bare, "ratio-to-bare")
	b.ReportMetric(float64(other), "not-applied")
	b.ReportMetric(float64(bareCPU.Microseconds()), "bare-cpu-µs/publish")
	b.ReportMetric(float64(writeCPU.Microseconds()), "cpu-µs/write")
	b.ReportMetric(cores, "cores-busy")
	enginetest.ReportWritePhases(b, before, fleetWritePhases(c))
}

// byWorkers runs op n times over workers goroutines and says how many
// succeeded a second, how many did not, and the CPU the process used per
// success and how many cores' worth it kept busy: the three nodes share
// this machine's cores with their brokers, so a rate taken with them
// saturated is the CPU each write costs three nodes, not their latency.
func byWorkers(n, workers int, op func(w int) bool) (perSec float64, failed int64, cpuPerOp time.Duration, cores float64) {
	var next, ok, other atomic.Int64
	var wg sync.WaitGroup
	t0, c0 := time.Now(), enginetest.CPUTime()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if op(w) {
					ok.Add(1)
				} else {
					other.Add(1)
				}
			}
		}(w)
	}
	wg.Wait()
	wall, cpu := time.Since(t0), enginetest.CPUTime()-c0
	return float64(ok.Load()) / wall.Seconds(), other.Load(), cpu / time.Duration(max(1, ok.Load())), cpu.Seconds() / wall.Seconds()
}

// fleetBatches counts the tracker's apply batches and the deliveries they
// carried, over the cluster's nodes.
func fleetBatches(c *fleettest.Cluster) (n, d uint64) {
	for i := range c.Size() {
		st := c.Node(i).Tracker().Replica().(*statelog.Replica).Stats()
		n, d = n+st.Batches, d+st.Deliveries
	}
	return n, d
}

// fleetWritePhases is the tracker's write phases over the cluster's nodes.
func fleetWritePhases(c *fleettest.Cluster) metrics.PhaseTotals {
	var regs []*metrics.Registry
	for i := range c.Size() {
		regs = append(regs, c.Node(i).Metrics())
	}
	return enginetest.WritePhases(string(engine.DomainTracker), regs...)
}

// BenchmarkCreateAtZero: creates filed through one node of the R3
// cluster, one at a time and 16 at once, riding creation marks (the
// default on a replicated log: statelog's zeromark.go) and asking the
// stream's creation instant before each append instead (what every
// create did before marks), alternated on the same cluster in one run
// (marks first in the first round, second in the second).
// Each case first files as many creates as it has writers, so its slots
// are marked before it is timed. µs/create is a writer's mean wait for an
// applied create; cpu-µs/create is the process's, three nodes and their
// brokers included; the phases are a write round's means (decide, check,
// append, settle), as the bench's phase table gives them. Beside them,
// c=1/bare is a create's append alone on the same cluster: a record of
// the size of a create's (record-bytes), on a new subject of a stream of three
// replicas led where the tracker's is, with its message id and an
// expectation of zero, through the same node's connection; c=1/barrier=…
// is the same shape of append onto the tracker's own log, which every
// node's applier consumes (trackerBarriers), the /gap=1ms one pausing a
// millisecond before each (as a create's other phases leave the brokers
// idle between appends); c=1/marks=true/quiet files each create only once
// every node has applied the last (quietCreates); c=1/marks=true/alone,
// run once at the end, files them with the two other nodes' appliers
// closed (aloneCreates).
//
//	go test -tags integration -run '^$' -bench CreateAtZero -benchtime 400x ./engine/fleettest/
func BenchmarkCreateAtZero(b *testing.B) {
	c := fleettest.StartCluster(b, fleettest.Options{})
	ctx := context.Background()
	n := c.Node(0)
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "BEN", "Bench"); err != nil {
		b.Fatal(err)
	}
	create := func(int) bool {
		wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		r, err := n.Tracker().CreateWorkItem(wctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "BEN", Title: "a create"})
		return err == nil && r.Outcome == engine.Applied
	}
	bare := bareAppends(b, c, n)
	// Made once: their message ids count on across rounds, as the
	// broker's duplicate window would answer one used again at once.
	markBarriers, readBarriers := trackerBarriers(b, n, "mark", 0), trackerBarriers(b, n, "barrier", 0)
	gappedMarks := trackerBarriers(b, n, "mark", time.Millisecond)
	for round := 0; round < 2; round++ {
		for _, workers := range []int{1, 16} {
			// The order alternates: the log grows, and a later case
			// files onto a longer one.
			for _, marks := range [][]bool{{true, false}, {false, true}}[round] {
				b.Run(fmt.Sprintf("c=%d/marks=%v", workers, marks), func(b *testing.B) {
					n.Log(engine.DomainTracker).SetMarkedZeroWrites(marks)
					byWorkers(workers, workers, create)
					settleMarking(b, n)
					before := n.Replica(engine.DomainTracker).Marks()
					phases := fleetWritePhases(c)
					b.ResetTimer()
					t0 := time.Now()
					perSec, failed, cpu, _ := byWorkers(b.N, workers, create)
					b.StopTimer()
					after := n.Replica(engine.DomainTracker).Marks()
					b.ReportMetric(float64(time.Since(t0).Microseconds())*float64(workers)/float64(b.N), "µs/create")
					b.ReportMetric(perSec, "creates/s")
					b.ReportMetric(float64(cpu.Microseconds()), "cpu-µs/create")
					b.ReportMetric(float64(after.Rode-before.Rode)/float64(b.N), "rode/create")
					b.ReportMetric(float64(failed), "not-applied")
					enginetest.ReportWritePhases(b, phases, fleetWritePhases(c))
				})
			}
		}
		b.Run("c=1/bare", bare)
		b.Run("c=1/barrier=mark", markBarriers)
		b.Run("c=1/barrier=barrier", readBarriers)
		b.Run("c=1/barrier=mark/gap=1ms", gappedMarks)
		b.Run("c=1/marks=true/quiet", func(b *testing.B) { quietCreates(b, c, n, create) })
	}
	// Last, as it closes what the others need.
	b.Run("c=1/marks=true/alone", func(b *testing.B) { aloneCreates(b, c, n, create) })
}

// aloneCreates is BenchmarkCreateAtZero's c=1/marks=true/alone case:
// the other nodes' tracker appliers are closed (their brokers stay in the
// cluster), so while a create's acknowledgement is on its way to n only
// n's own applier applies the record, not three. Set beside c=1/marks=true,
// its append phase says what the two other appliers cost a write's append
// on a machine of few cores.
func aloneCreates(b *testing.B, c *fleettest.Cluster, n *node.Node, create func(int) bool) {
	for i := 0; i < c.Size(); i++ {
		if c.Node(i) != n {
			c.Node(i).Replica(engine.DomainTracker).Close()
		}
	}
	n.Log(engine.DomainTracker).SetMarkedZeroWrites(true)
	create(0)
	settleMarking(b, n)
	phases := fleetWritePhases(c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !create(0) {
			b.Fatal("a create did not apply")
		}
	}
	b.StopTimer()
	enginetest.ReportWritePhases(b, phases, fleetWritePhases(c))
}

// settleMarking waits until no marking of n's tracker is under way.
func settleMarking(b *testing.B, n *node.Node) {
	for n.Replica(engine.DomainTracker).Marks().Marking > 0 {
		time.Sleep(time.Millisecond)
	}
}

// bareAppends is BenchmarkCreateAtZero's c=1/bare case on c, through n.
func bareAppends(b *testing.B, c *fleettest.Cluster, n *node.Node) func(b *testing.B) {
	ctx := context.Background()
	js := n.Broker().JS
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "BAREZERO", Subjects: []string{"barezero.>"}, Storage: jetstream.FileStorage, Replicas: 3})
	if err != nil {
		b.Fatal(err)
	}
	leadBy(b, n, "BAREZERO", s.CachedInfo().Cluster.Leader, trackerLeader(b, c))
	var seq atomic.Int64
	return func(b *testing.B) {
		w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "BEN", Title: "a create"})
		if err != nil || w.Item == nil {
			b.Fatal(err)
		}
		rec, err := n.Log(engine.DomainTracker).LastOnSubject(ctx, trackrec.ItemSubject(w.Item.ID))
		if err != nil {
			b.Fatal(err)
		}
		payload := make([]byte, len(rec.Data))
		b.ResetTimer()
		t0 := time.Now()
		for i := 0; i < b.N; i++ {
			k := seq.Add(1)
			if _, err := js.Publish(ctx, fmt.Sprintf("barezero.item.%d", k), payload, jetstream.WithMsgID(fmt.Sprintf("op-%d", k)),
				jetstream.WithExpectLastSequencePerSubject(0)); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		b.ReportMetric(float64(time.Since(t0).Microseconds())/float64(b.N), "µs/append")
		b.ReportMetric(float64(len(payload)), "record-bytes")
	}
}

// trackerBarriers is BenchmarkCreateAtZero's c=1/barrier cases: a
// barrier record padded to a create's size appended to the tracker's own
// log through n's Log, on a new subject each with its message id and an
// expectation of zero (subject "mark": every node's applier commits its
// checkpoint for it, as for a create), or on the reads' barrier subject
// with neither (subject "barrier": the appliers pass it without a
// transaction).
func trackerBarriers(b *testing.B, n *node.Node, on string, gap time.Duration) func(b *testing.B) {
	ctx := context.Background()
	var seq atomic.Int64
	return func(b *testing.B) {
		l := n.Log(engine.DomainTracker)
		rec := &record.Record{Kind: record.KindBarrier, Version: 1, Writer: n.Name(), Generation: n.Replica(engine.DomainTracker).Generation(),
			Subject: statelog.BarrierSubject(engine.DomainTracker), Payload: json.RawMessage(`"` + strings.Repeat("x", 300) + `"`)}
		data, err := record.Encode(rec)
		if err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		var took time.Duration
		for i := 0; i < b.N; i++ {
			if gap > 0 {
				time.Sleep(gap)
			}
			k := seq.Add(1)
			subject, id, zero := statelog.BarrierSubject(engine.DomainTracker), "", (*uint64)(nil)
			if on == "mark" {
				// Each case's own subjects and ids: one the duplicate
				// window still holds would be answered at once.
				subject = fmt.Sprintf("%smark.bench.g%d.%d", statelog.SubjectPrefix(engine.DomainTracker), gap.Microseconds(), k)
				id, zero = fmt.Sprintf("bench-g%d-%d", gap.Microseconds(), k), new(uint64)
			}
			t0 := time.Now()
			if _, err := l.Publish(ctx, subject, data, id, zero); err != nil {
				b.Fatal(err)
			}
			took += time.Since(t0)
		}
		b.StopTimer()
		b.ReportMetric(float64(took.Microseconds())/float64(b.N), "µs/append")
		b.ReportMetric(float64(len(data)), "record-bytes")
	}
}

// quietCreates is BenchmarkCreateAtZero's c=1/marks=true/quiet case: one
// create at a time through n, each filed only once every node of c has
// applied the one before, so no applier runs while it appends. Its
// phases (append above all) beside c=1/marks=true's say how much of a
// create's append is the other nodes' appliers sharing the cores.
func quietCreates(b *testing.B, c *fleettest.Cluster, n *node.Node, create func(int) bool) {
	ctx := context.Background()
	n.Log(engine.DomainTracker).SetMarkedZeroWrites(true)
	quiet := func() {
		target := n.Replica(engine.DomainTracker).Applied()
		for i := 0; i < c.Size(); i++ {
			if err := c.Node(i).Replica(engine.DomainTracker).WaitApplied(ctx, target); err != nil {
				b.Fatal(err)
			}
		}
	}
	create(0)
	settleMarking(b, n)
	quiet()
	phases := fleetWritePhases(c)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if !create(0) {
			b.Fatal("a create did not apply")
		}
		quiet()
	}
	b.StopTimer()
	enginetest.ReportWritePhases(b, phases, fleetWritePhases(c))
}
