package broker_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// TestInfoAgreesWithTheFullAnswer: Log.Info and Log.LastSeq decode only
// the fields they read of the broker's stream info answer; what they
// read equals what the client library's whole decode says, on a real
// embedded broker, and a deleted stream answers the same not-found error.
func TestInfoAgreesWithTheFullAnswer(t *testing.T) {
	b, stream, l := leanRig(t)
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
}

// BenchmarkStreamInfo: the CPU of one stream info question the way
// Log.Info asks it (the answer decoded for the fields it reads) against
// the client library's Stream.Info (the whole answer decoded), on a real
// embedded broker. cpu-µs/op is the process's, broker included.
//
//	go test -run '^$' -bench StreamInfo ./engine/broker
func BenchmarkStreamInfo(b *testing.B) {
	_, stream, l := leanRig(b)
	ctx := context.Background()
	for name, ask := range map[string]func() error{
		"log":     func() error { _, err := l.Info(ctx); return err },
		"library": func() error { _, err := stream.Info(ctx); return err },
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
