package broker_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// TestAtomicBatchArbitration pins what BATCHING.md's design relies on in
// nats-server's atomic batch publish, on a real embedded broker syncing
// always and a stream made as EnsureStream makes one, with atomic publish
// allowed:
//   - every message may carry its own Nats-Msg-Id and expected last
//     subject sequence, and a batch that passes lands in order at
//     consecutive sequences;
//   - one stale expectation refuses the whole batch (10071, naming the
//     subject's last sequence but not the message), and nothing lands;
//   - an op id already on the log refuses the whole batch (10201) rather
//     than answering that one message as a duplicate;
//   - a subject twice in a batch with expectations is refused (10164).
func TestAtomicBatchArbitration(t *testing.T) {
	ctx := context.Background()
	eb, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: t.TempDir(), Sync: broker.Sync{Always: true}, MaxStore: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer eb.Close()
	s, err := broker.EnsureStream(ctx, eb.JS, broker.StreamSpec{Name: "BENCH", Subjects: []string{"bench.>"}, MaxBytes: 64 << 20, Duplicates: 2 * time.Minute, Replicas: 1}, enginetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.AllowAtomicPublish = true
	if _, err := eb.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	seqs, err := publishAtomic(eb.Conn, []broker.BatchRecord{batchRecord("bench.a", "op-1", 0), batchRecord("bench.b", "op-2", 0), batchRecord("bench.c", "op-3", 0)})
	if err != nil || len(seqs) != 3 || seqs[0] != 1 || seqs[2] != 3 {
		t.Fatalf("a clean batch of three: %v %v", seqs, err)
	}

	refusals := []struct {
		name string
		recs []broker.BatchRecord
		code int
	}{
		{"one stale expectation", []broker.BatchRecord{batchRecord("bench.a", "op-4", 1), batchRecord("bench.b", "op-5", 1), batchRecord("bench.c", "op-6", 3)}, 10071},
		{"an op id already on the log", []broker.BatchRecord{batchRecord("bench.a", "op-7", 1), batchRecord("bench.b", "op-2", 2)}, 10201},
		{"a subject twice", []broker.BatchRecord{batchRecord("bench.a", "op-8", 1), batchRecord("bench.a", "op-9", 1)}, 10164},
	}
	for _, r := range refusals {
		_, err := publishAtomic(eb.Conn, r.recs)
		var br *broker.BatchRefusedError
		if !errors.As(err, &br) || br.Code != r.code {
			t.Fatalf("%s: want the whole batch refused %d, got %v", r.name, r.code, err)
		}
		info, err := s.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.State.LastSeq != 3 {
			t.Fatalf("%s: the refused batch landed part of itself: last sequence %d", r.name, info.State.LastSeq)
		}
	}

	// The log is intact and still takes single appends as today.
	ack, err := eb.JS.Publish(ctx, "bench.a", []byte("x"), jetstream.WithMsgID("op-10"), jetstream.WithExpectLastSequencePerSubject(1))
	if err != nil || ack.Sequence != 4 {
		t.Fatalf("a single append after the refusals: %v %v", ack, err)
	}
}
