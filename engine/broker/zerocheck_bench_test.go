package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// BenchmarkZeroCheck sizes a create's creation-instant check (statelog's
// checkCreatedBeforeZero: one Log.Info before an append at an expectation
// of zero) against the append alone, at one replica (where Log.Info reads
// the standalone server in process, SetLocalServer, as a node of one
// does) and at three clustered on loopback (where it is a stream info
// request answered by the stream's leader), every broker syncing always.
//
//   - append: the bare append of a create (its Nats-Msg-Id, its subject
//     new, expected at zero), one writer;
//   - check+append: Log.Info, then that append: a create's two requests;
//   - fold=shared: the candidate that would drop the check: every append
//     expects, through Nats-Expected-Last-Subject-Sequence-Subject, the
//     one record of a subject named by the stream's creation instant (a
//     "genesis" record a recreated stream lacks), instead of zero on its
//     own subject. c writers at once.
//   - fold=slot: what statelog's creation marks do instead: each writer
//     expects a mark of its own (a record on a subject of its own, named
//     by the creation instant), so no two appends in flight expect the
//     same subject.
//   - append (c writers): the bare append, c writers at once, beside it.
//
// µs/append is a writer's mean wait for one create's append (its check
// included), appends/s the run's rate; cpu-µs/op is the process's CPU a
// create, the three brokers included; refused/op is how many times a
// create's append was refused (each sent again until it lands).
//
// What it found (the note of issue 38 gives the figures): at three
// replicas nats-server lets one append with an expectation on a subject
// be in flight at a time (the leader's expectedPerSubjectInProcess, in
// checkMsgHeadersPreClusteredProposal), refusing the others with
// JSStreamWrongLastSequenceConstant; so the fold would serialise every
// create of a domain, where the check it replaces costs one request.
//
//	go test -run '^$' -bench ZeroCheck -benchtime 2000x ./engine/broker
func BenchmarkZeroCheck(b *testing.B) {
	for _, r := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d/append", r), func(b *testing.B) { benchZeroCheck(b, r, 1, zeroAppend) })
		b.Run(fmt.Sprintf("R%d/check+append", r), func(b *testing.B) { benchZeroCheck(b, r, 1, zeroCheckAppend) })
	}
	for _, c := range []int{1, 16} {
		b.Run(fmt.Sprintf("R3/append/c=%d", c), func(b *testing.B) { benchZeroCheck(b, 3, c, zeroAppend) })
		b.Run(fmt.Sprintf("R3/fold=shared/c=%d", c), func(b *testing.B) { benchZeroCheck(b, 3, c, zeroFoldShared) })
		b.Run(fmt.Sprintf("R3/fold=slot/c=%d", c), func(b *testing.B) { benchZeroCheck(b, 3, c, zeroFoldSlot) })
	}
}

// zeroEnv is the log a case appends to, the genesis record's subject and
// sequence (fold=shared), each writer's mark (fold=slot), and the count
// of appends the broker refused.
type zeroEnv struct {
	log        *broker.Log
	js         jetstream.JetStream
	genesis    string
	genesisSeq uint64
	marks      []uint64
	refused    *atomic.Int64
}

// zeroAppender makes the i-th create's append(s) of writer w.
type zeroAppender func(ctx context.Context, env zeroEnv, w, i int) error

func zeroAppend(ctx context.Context, env zeroEnv, w, i int) error {
	zero := uint64(0)
	_, err := env.log.Publish(ctx, fmt.Sprintf("crewlet.zero.item.w%d-%d", w, i), benchPayload, fmt.Sprintf("op-w%d-%d", w, i), &zero)
	return err
}

func zeroCheckAppend(ctx context.Context, env zeroEnv, w, i int) error {
	if _, err := env.log.Info(ctx); err != nil {
		return err
	}
	return zeroAppend(ctx, env, w, i)
}

// zeroFoldShared appends with the genesis record's sequence as the
// expectation, sent again (same message id) while the broker refuses it.
func zeroFoldShared(ctx context.Context, env zeroEnv, w, i int) error {
	return zeroFold(ctx, env, w, i, env.genesis, env.genesisSeq)
}

// zeroFoldSlot appends with the writer's own mark as the expectation.
func zeroFoldSlot(ctx context.Context, env zeroEnv, w, i int) error {
	return zeroFold(ctx, env, w, i, markSubjectOf(env.genesis, w), env.marks[w])
}

func markSubjectOf(genesis string, w int) string { return fmt.Sprintf("%s.w%d", genesis, w) }

func zeroFold(ctx context.Context, env zeroEnv, w, i int, on string, seq uint64) error {
	for {
		_, err := env.js.Publish(ctx, fmt.Sprintf("crewlet.zero.item.w%d-%d", w, i), benchPayload,
			jetstream.WithMsgID(fmt.Sprintf("op-w%d-%d", w, i)), jetstream.WithExpectLastSequenceForSubject(seq, on))
		var ae *jetstream.APIError
		if !errors.As(err, &ae) || (ae.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequence && ae.ErrorCode != jetstream.JSErrCodeStreamWrongLastSequenceConstant) {
			return err
		}
		env.refused.Add(1)
	}
}

// benchZeroCheck runs b.N creates through c writers on a fresh log of r
// replicas, its genesis record written first.
func benchZeroCheck(b *testing.B, r, c int, appendOne zeroAppender) {
	ctx := context.Background()
	eb := startBrokers(b, r)
	var s jetstream.Stream
	enginetest.CheckFor(b, 30*time.Second, 100*time.Millisecond, func() error {
		var err error
		s, err = broker.EnsureStream(ctx, eb.JS, broker.StreamSpec{Name: "ZERO", Subjects: []string{"crewlet.zero.>"}, MaxBytes: 2 << 30, Duplicates: 2 * time.Minute, Replicas: r}, enginetest.Logger())
		return err
	})
	l := broker.NewLog(eb.JS, s, "zero", "n1", enginetest.Logger())
	l.SetLocalServer(eb.Server) // a node's own broker; ignored where it is clustered
	created := s.CachedInfo().Created
	env := zeroEnv{log: l, js: eb.JS, genesis: fmt.Sprintf("crewlet.zero.genesis.%d", created.UnixNano()), refused: new(atomic.Int64)}
	ack, err := eb.JS.Publish(ctx, env.genesis, nil, jetstream.WithExpectLastSequencePerSubject(0))
	if err != nil {
		b.Fatal(err)
	}
	env.genesisSeq = ack.Sequence
	for w := 0; w < c; w++ {
		ack, err := eb.JS.Publish(ctx, markSubjectOf(env.genesis, w), nil)
		if err != nil {
			b.Fatal(err)
		}
		env.marks = append(env.marks, ack.Sequence)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, c)
	b.ResetTimer()
	c0, start := enginetest.CPUTime(), time.Now()
	for w := 0; w < c; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= b.N; i = int(next.Add(1)) {
				if err := appendOne(ctx, env, w, i); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	wall := time.Since(start)
	b.ReportMetric(float64(wall.Microseconds())/float64(b.N)*float64(c), "µs/append")
	b.ReportMetric(float64(b.N)/wall.Seconds(), "appends/s")
	b.ReportMetric(float64((enginetest.CPUTime()-c0).Microseconds())/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(env.refused.Load())/float64(b.N), "refused/op")
}
