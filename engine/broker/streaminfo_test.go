package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// TestInfoAgreesWithTheFullAnswer: Log.Info and Log.LastSeq decode only
// the fields they read of the broker's stream info answer, or read them
// from the standalone server in process (local, SetLocalServer); what
// they read equals what the client library's whole decode says, on a
// real embedded broker; a deleted stream answers the same not-found
// error, and one deleted and created again its new creation instant.
func TestInfoAgreesWithTheFullAnswer(t *testing.T) {
	for _, local := range []bool{false, true} {
		t.Run(fmt.Sprintf("local=%v", local), func(t *testing.T) {
			b, stream, l := leanRig(t)
			if local {
				l.SetLocalServer(b.Server)
			}
			ctx := context.Background()
			for i := 0; i < 7; i++ {
				if _, err := b.JS.Publish(ctx, "crewlet.lean.x", []byte("r")); err != nil {
					t.Fatal(err)
				}
			}
			got, err := l.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			full, err := stream.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got.FirstSeq != full.State.FirstSeq || got.LastSeq != full.State.LastSeq || got.Bytes != full.State.Bytes ||
				got.MaxBytes != full.Config.MaxBytes || !got.Created.Equal(full.Created) || got.Leaderless {
				t.Fatalf("Info = %+v, the full answer: state %+v, max_bytes %d, created %v", got, full.State, full.Config.MaxBytes, full.Created)
			}
			if got.LastSeq != 7 || got.Bytes == 0 || got.Created.IsZero() {
				t.Fatalf("Info = %+v after 7 appends", got)
			}
			end, ok, err := l.LastSeq(ctx)
			if err != nil || !ok || end != 7 {
				t.Fatalf("LastSeq = %d, %v, %v; want 7 known at one replica", end, ok, err)
			}

			if err := b.JS.DeleteStream(ctx, "LEAN"); err != nil {
				t.Fatal(err)
			}
			if _, err := l.Info(ctx); !errors.Is(err, jetstream.ErrStreamNotFound) {
				t.Fatalf("Info of a deleted stream = %v, want jetstream.ErrStreamNotFound", err)
			}
			if _, ok, _ := l.LastSeq(ctx); ok {
				t.Fatal("LastSeq of a deleted stream answered a log end")
			}

			again, err := broker.EnsureStream(ctx, b.JS, broker.StreamSpec{Name: "LEAN", Subjects: []string{"crewlet.lean.>"},
				MaxBytes: 1 << 20, Duplicates: time.Minute}, enginetest.Logger())
			if err != nil {
				t.Fatal(err)
			}
			remade, err := again.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			got, err = l.Info(ctx)
			if err != nil || !got.Created.Equal(remade.Created) || got.Created.Equal(full.Created) || got.LastSeq != 0 {
				t.Fatalf("Info of the stream created again = %+v, %v; want its new creation instant %v (was %v) and no records", got, err, remade.Created, full.Created)
			}
			if local {
				readsWithoutItsConnection(t, b, remade.Created)
			}
		})
	}
}

// readsWithoutItsConnection checks that a log reading its stream's state
// in process answers with its connection closed, so with no API question
// asked: the state it reads is the server's own (created, the stream's
// creation instant).
func readsWithoutItsConnection(t *testing.T, b *broker.Embedded, created time.Time) {
	t.Helper()
	ctx := context.Background()
	nc, err := nats.Connect("", nats.InProcessServer(b.Server))
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	s, err := js.Stream(ctx, "LEAN")
	if err != nil {
		t.Fatal(err)
	}
	cut := broker.NewLog(js, s, "lean", "n1", enginetest.Logger())
	cut.SetLocalServer(b.Server)
	nc.Close()
	if got, err := cut.Info(ctx); err != nil || !got.Created.Equal(created) {
		t.Fatalf("Info read in process with the connection closed = %+v, %v", got, err)
	}
}

// BenchmarkStreamInfo: the CPU of one stream info question the way
// Log.Info asks it (the answer decoded for the fields it reads) against
// the client library's Stream.Info (the whole answer decoded), on a real
// embedded broker holding nine streams as a node's does, and the same
// state read from the standalone server in process (log=local,
// SetLocalServer: what a node of one does). cpu-µs/op is the process's,
// broker included.
//
//	go test -run '^$' -bench StreamInfo ./engine/broker
func BenchmarkStreamInfo(b *testing.B) {
	bk, stream, l := leanRig(b)
	local := broker.NewLog(bk.JS, stream, "lean", "n1", enginetest.Logger())
	local.SetLocalServer(bk.Server)
	ctx := context.Background()
	// The in-process read walks every stream of the account: a node's
	// broker holds about nine (the domains' logs, the duty, fleet and
	// turn buckets, the snapshot store's two), so this one does too.
	for i := 0; i < 8; i++ {
		name := fmt.Sprintf("OTHER%d", i)
		if _, err := broker.EnsureStream(ctx, bk.JS, broker.StreamSpec{Name: name, Subjects: []string{"crewlet.other" + fmt.Sprint(i) + ".>"},
			MaxBytes: 1 << 20, Duplicates: time.Minute}, enginetest.Logger()); err != nil {
			b.Fatal(err)
		}
	}
	for name, ask := range map[string]func() error{
		"log":       func() error { _, err := l.Info(ctx); return err },
		"library":   func() error { _, err := stream.Info(ctx); return err },
		"log=local": func() error { _, err := local.Info(ctx); return err },
	} {
		b.Run(name, func(b *testing.B) {
			c0 := enginetest.CPUTime()
			for i := 0; i < b.N; i++ {
				if err := ask(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((enginetest.CPUTime()-c0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}

// leanRig is an embedded broker with one stream, LEAN, opened as a log.
func leanRig(tb testing.TB) (*broker.Embedded, jetstream.Stream, *broker.Log) {
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "i1", StoreDir: tb.TempDir(), Sync: broker.Sync{Always: true}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(b.Close)
	stream, err := broker.EnsureStream(context.Background(), b.JS, broker.StreamSpec{Name: "LEAN", Subjects: []string{"crewlet.lean.>"},
		MaxBytes: 1 << 20, Duplicates: time.Minute}, enginetest.Logger())
	if err != nil {
		tb.Fatal(err)
	}
	return b, stream, broker.NewLog(b.JS, stream, "lean", "n1", enginetest.Logger())
}

// TestElectionBoundFollowsAScaledStream: a stream an operator scales from
// one replica to three under a running log is read as replicated from the
// next stream info answer on (the heartbeat asks one every beat), so the
// log's election bound is a raft election's, not the lone broker's zero.
// Log.Info decodes its own answer; the count is noted from it, not from
// the client library's cached copy, which that answer no longer refreshes.
func TestElectionBoundFollowsAScaledStream(t *testing.T) {
	b := startBrokers(t, 3)
	ctx := context.Background()
	var stream jetstream.Stream
	enginetest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		var err error
		stream, err = broker.EnsureStream(ctx, b.JS, broker.StreamSpec{Name: "SCALED", Subjects: []string{"crewlet.scaled.>"},
			MaxBytes: 1 << 20, Duplicates: time.Minute, Replicas: 1}, enginetest.Logger())
		return err
	})
	l := broker.NewLog(b.JS, stream, "scaled", "n1", enginetest.Logger())
	if got := l.ElectionBound(); got != 0 {
		t.Fatalf("a one-replica stream's election bound is %v, want 0", got)
	}
	cfg := stream.CachedInfo().Config
	cfg.Replicas = 3
	enginetest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		_, err := b.JS.UpdateStream(ctx, cfg)
		return err
	})
	enginetest.CheckFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		if _, err := l.Info(ctx); err != nil {
			return err
		}
		if l.ElectionBound() == 0 {
			return fmt.Errorf("after the stream was scaled to three replicas the election bound is still 0")
		}
		return nil
	})
}

// BenchmarkStreamInfoBesideBatches: how long one stream info question
// (Log.Info, what a create's creation-instant check asks) waits on an
// idle one-replica stream, and on the same stream while 64 writers
// append through its combiner. An atomic batch's commit holds the
// stream's lock (nats-server's processJetStreamAtomicBatchMsg) that the
// answer's creation instant is read under (mset.createdTime), so this
// sizes that wait apart from a node's other load. The figure is
// info-µs/op; batches says the combiner did batch. Measured here: 56–60
// µs idle, 95–119 µs beside the batches, against the 2–5 ms a create's
// check waited inside a node at 64 writers: the lock is not that wait.
//
//	go test -run '^$' -bench StreamInfoBesideBatches -benchtime 200x ./engine/broker
func BenchmarkStreamInfoBesideBatches(b *testing.B) {
	for _, writers := range []int{0, 64} {
		b.Run(fmt.Sprintf("writers=%d", writers), func(b *testing.B) {
			bk, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "i1", StoreDir: b.TempDir(), Sync: broker.Sync{Always: true}})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(bk.Close)
			ctx := context.Background()
			stream, err := broker.EnsureStream(ctx, bk.JS, broker.StreamSpec{Name: "BUSY", Subjects: []string{"crewlet.busy.>"},
				MaxBytes: 1 << 30, Duplicates: time.Minute, AtomicBatches: true}, enginetest.Logger())
			if err != nil {
				b.Fatal(err)
			}
			l := broker.NewLog(bk.JS, stream, "busy", "n1", enginetest.Logger())
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := 0; w < writers; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					subject := fmt.Sprintf("crewlet.busy.w%d", w)
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						_, _ = l.Publish(ctx, subject, []byte("a record of about the size of a create"), fmt.Sprintf("w%d-%d", w, i), nil)
					}
				}()
			}
			time.Sleep(200 * time.Millisecond) // the writers under way
			var waited time.Duration
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				t0 := time.Now()
				if _, err := l.Info(ctx); err != nil {
					b.Fatal(err)
				}
				waited += time.Since(t0)
			}
			b.StopTimer()
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(waited.Microseconds())/float64(b.N), "info-µs/op")
			b.ReportMetric(float64(l.Batches().Taken), "batches")
		})
	}
}
