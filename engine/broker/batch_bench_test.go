package broker_test

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/internal/loopback"
)

// BenchmarkAppendShapes measures the bare append rates a write path could
// be built on, on a real embedded nats-server with the stream configured
// as Crewlet configures a domain log (file storage, limits retention,
// discard new, a two-minute duplicate window; R1 on one broker, R3 on
// three clustered on loopback) and every broker syncing always
// (stream.sync's default). Every record carries what a Crewlet
// record carries: its own Nats-Msg-Id and the expected last sequence of
// its subject, each writer on a subject of its own.
//
//   - single: c writers, each a synchronous Publish (today's shape);
//   - async: c writers sharing one connection's async publisher, each
//     keeping one publish in flight (c in flight in all);
//   - atomic: c records per atomic batch (Nats-Batch-Id / -Sequence /
//     -Commit), one batch in flight, the shape a write path combining c
//     concurrent proposals would have;
//   - atomic4: c records in flight as four concurrent batches of c/4.
//
// records/s is the figure; ratios are to single at the same c. The fsyncs
// each shape costs are counted outside Go, by running one case under
// strace (see BATCHING.md for the command).
func BenchmarkAppendShapes(b *testing.B) {
	for _, r := range []int{1, 3} {
		for _, c := range []int{1, 16, 64} {
			name := fmt.Sprintf("R%d/%%s/c=%d", r, c)
			b.Run(fmt.Sprintf(name, "single"), func(b *testing.B) { benchShape(b, r, c, false, runSingle) })
			b.Run(fmt.Sprintf(name, "async"), func(b *testing.B) { benchShape(b, r, c, false, runAsync) })
			b.Run(fmt.Sprintf(name, "atomic"), func(b *testing.B) { benchShape(b, r, c, true, atomicRunner(1)) })
			if c >= 4 {
				b.Run(fmt.Sprintf(name, "atomic4"), func(b *testing.B) { benchShape(b, r, c, true, atomicRunner(4)) })
			}
			b.Run(fmt.Sprintf(name, "log"), func(b *testing.B) { benchShape(b, r, c, false, runLog) })
			b.Run(fmt.Sprintf(name, "combined"), func(b *testing.B) { benchShape(b, r, c, true, runLog) })
		}
	}
}

// benchPayload is about the size of an ordinary tracker record.
var benchPayload = make([]byte, 300)

// appendEnv is one broker and stream a shape runs against.
type appendEnv struct {
	b  *broker.Embedded
	js jetstream.JetStream
	nc *nats.Conn
	// retries counts appends sent again after an in-process refusal.
	retries *atomic.Int64
}

type shapeRunner func(b *testing.B, env appendEnv, c int)

// benchShape starts a syncing broker (three clustered on loopback for
// r=3, publishing through the first), creates the stream exactly as
// broker.EnsureStream does (atomic publish allowed on top when the shape
// needs it) and runs the shape for b.N records.
func benchShape(b *testing.B, r, c int, allowAtomic bool, run shapeRunner) {
	ctx := context.Background()
	eb := startBrokers(b, r)
	s, err := broker.EnsureStream(ctx, eb.JS, broker.StreamSpec{Name: "BENCH", Subjects: []string{"bench.>"}, MaxBytes: 2 << 30, Duplicates: 2 * time.Minute, Replicas: r}, enginetest.Logger())
	if err != nil {
		b.Fatal(err)
	}
	if allowAtomic {
		cfg := s.CachedInfo().Config
		cfg.AllowAtomicPublish = true
		if _, err := eb.JS.UpdateStream(ctx, cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	start := time.Now()
	var retries atomic.Int64
	run(b, appendEnv{b: eb, js: eb.JS, nc: eb.Conn, retries: &retries}, c)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "records/s")
	b.ReportMetric(float64(retries.Load())/float64(b.N), "retries/record")
}

// startBrokers starts r embedded brokers syncing always, clustered when
// r > 1, closed when the test or benchmark ends; it returns the first.
func startBrokers(tb testing.TB, r int) *broker.Embedded {
	routes := make([]string, r)
	listens := make([]string, r)
	for i := range listens {
		// Outside the ephemeral range: a port taken on port 0 and closed
		// can go to another process's outgoing connection before the
		// broker binds it (internal/loopback).
		ln, err := loopback.Listen()
		if err != nil {
			tb.Fatal(err)
		}
		listens[i], routes[i] = ln.Addr().String(), "nats://"+ln.Addr().String()
		ln.Close()
	}
	var first *broker.Embedded
	for i := 0; i < r; i++ {
		o := broker.EmbeddedOptions{ServerName: fmt.Sprintf("bench%d", i), StoreDir: tb.TempDir(), Sync: broker.Sync{Always: true}, MaxStore: 4 << 30}
		if r > 1 {
			o.Cluster = &broker.ClusterOptions{Name: "bench", Listen: listens[i], Routes: routes}
		}
		eb, err := broker.StartEmbedded(o)
		if err != nil {
			tb.Fatal(err)
		}
		tb.Cleanup(eb.Close)
		if first == nil {
			first = eb
		}
	}
	return first
}

// share hands out b.N records to writers: each call takes one, false when
// none are left.
type share struct{ left atomic.Int64 }

func (s *share) take() bool { return s.left.Add(-1) >= 0 }

// takeUpTo takes up to n records and says how many it got.
func (s *share) takeUpTo(n int) int {
	got := 0
	for got < n && s.take() {
		got++
	}
	return got
}

func newShare(n int) *share {
	s := &share{}
	s.left.Store(int64(n))
	return s
}

// writers runs fn on c goroutines and fails the benchmark on the first
// error.
func writers(b *testing.B, c int, fn func(w int) error) {
	var wg sync.WaitGroup
	errs := make(chan error, c)
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if err := fn(w); err != nil {
				errs <- err
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

func runSingle(b *testing.B, env appendEnv, c int) {
	sh := newShare(b.N)
	writers(b, c, func(w int) error {
		subject, last := "bench.w"+strconv.Itoa(w), uint64(0)
		for i := 0; sh.take(); i++ {
			id := fmt.Sprintf("w%d-%d", w, i)
			ack, err := env.js.Publish(context.Background(), subject, benchPayload, jetstream.WithMsgID(id),
				jetstream.WithExpectLastSequencePerSubject(last), jetstream.WithExpectStream("BENCH"))
			for inProcess(err) {
				env.retries.Add(1)
				ack, err = env.js.Publish(context.Background(), subject, benchPayload, jetstream.WithMsgID(id),
					jetstream.WithExpectLastSequencePerSubject(last), jetstream.WithExpectStream("BENCH"))
			}
			if err != nil {
				return err
			}
			last = ack.Sequence
		}
		return nil
	})
}

// runLog appends through broker.Log.Publish, as the write path does: it
// combines concurrent appends into batches when the stream allows them.
func runLog(b *testing.B, env appendEnv, c int) {
	s, err := env.js.Stream(context.Background(), "BENCH")
	if err != nil {
		b.Fatal(err)
	}
	l := broker.NewLog(env.js, s, "bench", "n1", enginetest.Logger())
	sh := newShare(b.N)
	writers(b, c, func(w int) error {
		subject, last := "bench.w"+strconv.Itoa(w), uint64(0)
		for i := 0; sh.take(); i++ {
			id := fmt.Sprintf("w%d-%d", w, i)
			ack, err := l.Publish(context.Background(), subject, benchPayload, id, &last)
			for errors.As(err, new(*statelog.WrongSequenceError)) {
				env.retries.Add(1)
				ack, err = l.Publish(context.Background(), subject, benchPayload, id, &last)
			}
			if err != nil {
				return err
			}
			last = ack.Seq
		}
		return nil
	})
	b.ReportMetric(float64(l.Batches().Taken), "batches")
}

func runAsync(b *testing.B, env appendEnv, c int) {
	js, err := jetstream.New(env.nc, jetstream.WithPublishAsyncMaxPending(c))
	if err != nil {
		b.Fatal(err)
	}
	sh := newShare(b.N)
	writers(b, c, func(w int) error {
		subject, last := "bench.w"+strconv.Itoa(w), uint64(0)
		for i := 0; sh.take(); i++ {
			if last, err = asyncOne(js, env, subject, fmt.Sprintf("w%d-%d", w, i), last); err != nil {
				return err
			}
		}
		return nil
	})
}

// asyncOne appends one record through the async publisher and waits for
// its answer, sending it again while the broker says its subject has an
// append in process; it returns the record's sequence.
func asyncOne(js jetstream.JetStream, env appendEnv, subject, id string, last uint64) (uint64, error) {
	for {
		f, err := js.PublishAsync(subject, benchPayload, jetstream.WithMsgID(id),
			jetstream.WithExpectLastSequencePerSubject(last), jetstream.WithExpectStream("BENCH"))
		if err != nil {
			return 0, err
		}
		select {
		case ack := <-f.Ok():
			return ack.Sequence, nil
		case err := <-f.Err():
			if !inProcess(err) {
				return 0, err
			}
			env.retries.Add(1)
		}
	}
}

// inProcess says the broker refused an append only because its subject
// had another append in process (10164, a clustered stream's answer to an
// expectation on a subject whose last append it has not finished
// applying, seen here right after that append's own acknowledgement).
// Nothing was stored; the benchmarks send it again and count it.
func inProcess(err error) bool {
	var ae *jetstream.APIError
	var br *broker.BatchRefusedError
	return errors.As(err, &ae) && ae.ErrorCode == 10164 || errors.As(err, &br) && br.Code == 10164
}

// atomicRunner keeps `batches` atomic batches in flight, each of c/batches
// records on subjects of its own.
func atomicRunner(batches int) shapeRunner {
	return func(b *testing.B, env appendEnv, c int) {
		size := c / batches
		sh := newShare(b.N)
		writers(b, batches, func(w int) error {
			last := make([]uint64, size)
			for round := 0; ; round++ {
				n := sh.takeUpTo(size)
				if n == 0 {
					return nil
				}
				recs := make([]broker.BatchRecord, n)
				for k := range recs {
					recs[k] = batchRecord(fmt.Sprintf("bench.b%d.%d", w, k), fmt.Sprintf("b%d-%d-%d", w, round, k), last[k])
				}
				seqs, err := publishAtomic(env.nc, recs)
				for inProcess(err) {
					env.retries.Add(1)
					seqs, err = publishAtomic(env.nc, recs)
				}
				if err != nil {
					return err
				}
				copy(last, seqs)
			}
		})
	}
}

// batchRecord is a bench record on subject under id, expecting last.
func batchRecord(subject, id string, last uint64) broker.BatchRecord {
	return broker.BatchRecord{Subject: subject, Data: benchPayload, MsgID: id, ExpectLast: &last}
}

// publishAtomic sends recs to the BENCH stream as one atomic batch.
func publishAtomic(nc *nats.Conn, recs []broker.BatchRecord) ([]uint64, error) {
	return broker.PublishBatch(nc, "BENCH", recs, 30*time.Second)
}
