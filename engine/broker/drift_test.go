//go:build integration

package broker_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
)

// driftRig is a real embedded broker whose own connection runs through a
// proxy that can lose answers, and one stream on it.
type driftRig struct {
	t       *testing.T
	b       *broker.Embedded
	proxy   *enginetest.AckDropper
	stream  jetstream.Stream
	subject string
}

func startDriftBroker(t *testing.T) (*broker.Embedded, *enginetest.AckDropper) {
	var proxy *enginetest.AckDropper
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "d1", StoreDir: t.TempDir(), Sync: broker.Sync{Always: true},
		ClientURL: func(u string) string { proxy = enginetest.NewAckDropper(t, u); return proxy.URL() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b, proxy
}

// newDriftRig makes a stream of its own on b for one case.
func newDriftRig(t *testing.T, b *broker.Embedded, proxy *enginetest.AckDropper, name string) *driftRig {
	r := &driftRig{t: t, b: b, proxy: proxy, subject: "crewlet." + name + ".x"}
	var err error
	r.stream, err = broker.EnsureStream(context.Background(), b.JS, broker.StreamSpec{Name: "DRIFT_" + name, Subjects: []string{"crewlet." + name + ".>"},
		MaxBytes: 1 << 20, Duplicates: time.Minute}, enginetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// log opens the stream as node's log, its lines going to rec.
func (r *driftRig) log(node string, rec *enginetest.Recorder) *broker.Log {
	l := broker.NewLog(r.b.JS, r.stream, "drift", node, rec.Logger())
	l.SetDrainWait(time.Second)
	return l
}

func (r *driftRig) publish(n int) {
	for i := 0; i < n; i++ {
		if _, err := r.b.JS.Publish(context.Background(), r.subject, []byte("r")); err != nil {
			r.t.Fatal(err)
		}
	}
}

// read takes deliveries from sub through seq last (acknowledging through
// ack, none when 0), then stops the reader: a process that stopped.
func (r *driftRig) read(node string, last, ack uint64) {
	r.t.Helper()
	sub, err := r.log(node, enginetest.NewRecorder()).Subscribe(context.Background(), 0)
	if err != nil {
		r.t.Fatal(err)
	}
	for {
		select {
		case d := <-sub.C():
			if d.Seq == ack {
				if err := d.Ack(); err != nil {
					r.t.Fatal(err)
				}
			}
			if d.Seq < last {
				continue
			}
		case <-time.After(30 * time.Second):
			r.t.Fatalf("no delivery through %d", last)
		}
		break
	}
	// An ack is asynchronous: let the broker's state show it before the
	// process "stops".
	enginetest.CheckFor(r.t, 10*time.Second, 10*time.Millisecond, func() error {
		c, err := r.stream.Consumer(context.Background(), broker.ConsumerName(node))
		if err != nil {
			return err
		}
		info, err := c.Info(context.Background())
		if err != nil {
			return err
		}
		if info.AckFloor.Stream != ack || info.Delivered.Stream < last {
			return fmt.Errorf("reader at ack %d delivered %d", info.AckFloor.Stream, info.Delivered.Stream)
		}
		return nil
	})
	sub.Stop()
}

// reopen opens the reader again at checkpoint and returns the drift it
// logged ("" for none) and the first record it then delivers.
func (r *driftRig) reopen(node string, checkpoint uint64) (enginetest.Line, uint64) {
	r.t.Helper()
	rec := enginetest.NewRecorder()
	l := r.log(node, rec)
	sub, err := l.Subscribe(context.Background(), checkpoint)
	if err != nil {
		r.t.Fatal(err)
	}
	defer sub.Stop()
	r.publish(1) // something past every reader's position
	var first uint64
	select {
	case d := <-sub.C():
		first = d.Seq
	case <-time.After(30 * time.Second):
		r.t.Fatal("the reopened reader delivers nothing")
	}
	var line enginetest.Line
	if ls := rec.Lines(engine.EvConsumerRebuilt); len(ls) == 1 {
		line = ls[0]
	} else if len(ls) > 1 {
		r.t.Fatalf("rebuilt %d times: %+v", len(ls), ls)
	}
	return line, first
}

// TestConsumerDrifts: each of the four drifts produced on a real broker
// by a reader that stopped where the drift leaves it, then opened at a
// checkpoint that disagrees: the reader is rebuilt at the checkpoint,
// the rebuild names the drift (acknowledged_past_checkpoint as a WARN),
// and the first record the new reader hands over is the one after the
// checkpoint. A reader level with the checkpoint is kept as it is.
func TestConsumerDrifts(t *testing.T) {
	b, proxy := startDriftBroker(t)
	cases := []struct {
		node                 string
		readThrough, ackedAt uint64
		publishAfter         int
		checkpoint           uint64
		drift                string
		level                string
	}{
		// The database is older than its reader (deleted, restored).
		{node: "ack", readThrough: 5, ackedAt: 5, checkpoint: 2, drift: "acknowledged_past_checkpoint", level: "WARN"},
		// Handed over past the checkpoint, never acknowledged.
		{node: "deliv", readThrough: 5, ackedAt: 0, checkpoint: 2, drift: "delivered_past_checkpoint", level: "INFO"},
		// Handed over at or below the checkpoint, acknowledged in part:
		// the rest held for a process that is gone.
		{node: "flight", readThrough: 5, ackedAt: 3, checkpoint: 5, drift: "in_flight_for_a_gone_reader", level: "INFO"},
		// The rows moved past the reader (a snapshot adopted at boot).
		{node: "behind", readThrough: 5, ackedAt: 5, publishAfter: 3, checkpoint: 8, drift: "behind_checkpoint", level: "INFO"},
		// A clean restart.
		{node: "clean", readThrough: 5, ackedAt: 5, checkpoint: 5},
	}
	for _, c := range cases {
		t.Run(c.node, func(t *testing.T) {
			r := newDriftRig(t, b, proxy, c.node)
			r.publish(5)
			r.read(c.node, c.readThrough, c.ackedAt)
			r.publish(c.publishAfter)
			line, first := r.reopen(c.node, c.checkpoint)
			if line.Attrs["drift"] != nilIfEmpty(c.drift) || (c.drift != "" && line.Level.String() != c.level) {
				t.Fatalf("rebuild line %+v, want drift %q at %s", line, c.drift, c.level)
			}
			if c.drift != "" && first != c.checkpoint+1 {
				t.Fatalf("the rebuilt reader first delivers %d, want %d (after the checkpoint)", first, c.checkpoint+1)
			}
		})
	}
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TestBelowFloorToldApart: a reader the trim moved over records it never
// handed over (the broker carries a reader past what a purge removed)
// reports acknowledgements past the checkpoint, yet is not ahead of the
// rows: read against the log's first sequence it is kept, and hands over
// the first record the log still holds. With the first sequence
// unreadable (its answer lost on the way) the raw positions are judged:
// it is rebuilt acknowledged_past_checkpoint, and the WARN says the
// first sequence was unreadable.
func TestBelowFloorToldApart(t *testing.T) {
	b, proxy := startDriftBroker(t)
	for _, unreadable := range []bool{false, true} {
		name := "floor"
		if unreadable {
			name = "unread"
		}
		t.Run(name, func(t *testing.T) {
			r := newDriftRig(t, b, proxy, name)
			r.publish(5)
			r.read(name, 5, 2) // rows at 2, acknowledged through 2
			if err := r.stream.Purge(context.Background(), jetstream.WithPurgeSequence(6)); err != nil {
				t.Fatal(err)
			}
			if unreadable {
				proxy.DropAPIOf("stream_info_response", 1)
				defer proxy.Heal()
			}
			line, first := r.reopen(name, 2)
			if first != 6 {
				t.Fatalf("the reader first delivers %d, want 6 (the first record the log holds)", first)
			}
			if !unreadable {
				if line.Attrs != nil {
					t.Fatalf("a reader moved over trimmed records was rebuilt: %+v", line)
				}
				return
			}
			note, _ := line.Attrs["note"].(string)
			if line.Attrs["drift"] != "acknowledged_past_checkpoint" || line.Level.String() != "WARN" ||
				line.Attrs["first_seq"] != "unreadable" || !strings.Contains(note, "first sequence was unreadable") {
				t.Fatalf("rebuild line %+v", line)
			}
		})
	}
}

// TestRebuildFailed: a rebuild whose create the broker never answers
// (the answers lost on the way) fails. behind_checkpoint and
// in_flight_for_a_gone_reader keep the reader the broker then says it
// holds, with a WARN; acknowledged_past_checkpoint and
// delivered_past_checkpoint fail the open naming the domain.
func TestRebuildFailed(t *testing.T) {
	b, proxy := startDriftBroker(t)
	cases := []struct {
		node         string
		ackedAt      uint64
		publishAfter int
		checkpoint   uint64
		drift        string
		keeps        bool
	}{
		{node: "behind", ackedAt: 5, publishAfter: 3, checkpoint: 8, drift: "behind_checkpoint", keeps: true},
		{node: "flight", ackedAt: 3, checkpoint: 5, drift: "in_flight_for_a_gone_reader", keeps: true},
		{node: "ack", ackedAt: 5, checkpoint: 2, drift: "acknowledged_past_checkpoint"},
		{node: "deliv", checkpoint: 2, drift: "delivered_past_checkpoint"},
	}
	for _, c := range cases {
		t.Run(c.node, func(t *testing.T) {
			r := newDriftRig(t, b, proxy, c.node)
			r.publish(5)
			r.read(c.node, 5, c.ackedAt)
			r.publish(c.publishAfter)
			rec := enginetest.NewRecorder()
			l := r.log(c.node, rec)
			l.SetSettleWait(time.Second)
			proxy.DropAPIOf("consumer_create_response", 1000)
			defer proxy.Heal()
			sub, err := l.Subscribe(context.Background(), c.checkpoint)
			if !c.keeps {
				if err == nil || !strings.Contains(err.Error(), "the drift reader") || !strings.Contains(err.Error(), c.drift) {
					t.Fatalf("open: %v, want a failure naming the domain and %s", err, c.drift)
				}
				return
			}
			if err != nil {
				t.Fatalf("open: %v, want the reader kept", err)
			}
			sub.Stop()
			ls := rec.Lines(engine.EvConsumerRebuildFailed)
			if len(ls) != 1 || ls[0].Level.String() != "WARN" || ls[0].Attrs["drift"] != c.drift {
				t.Fatalf("rebuild-failed lines: %+v", ls)
			}
		})
	}
}

// TestRebuildLeavesNoReader: a rebuild whose create the broker refuses
// (the stream's consumer count was capped below what it holds since the
// reader was made, so a reader is deleted and none can be made again)
// leaves no reader:
// even behind_checkpoint, whose reader would otherwise be kept, fails the
// open naming the domain, since a reader guessed at could be one that no
// longer exists.
func TestRebuildLeavesNoReader(t *testing.T) {
	ctx := context.Background()
	b, proxy := startDriftBroker(t)
	r := newDriftRig(t, b, proxy, "gone")
	r.publish(5)
	r.read("gone", 5, 5)
	r.publish(3)
	r.read("other", 5, 5)
	cfg := r.stream.CachedInfo().Config
	cfg.MaxConsumers = 1
	if _, err := b.JS.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	rec := enginetest.NewRecorder()
	_, err := r.log("gone", rec).Subscribe(ctx, 8)
	if err == nil || !strings.Contains(err.Error(), "the drift reader") || !strings.Contains(err.Error(), "behind_checkpoint") {
		t.Fatalf("open with no reader left: %v", err)
	}
	if _, err := r.stream.Consumer(ctx, broker.ConsumerName("gone")); err == nil {
		t.Fatal("the broker still holds a reader: the case this test makes did not happen")
	}
	if l := rec.Lines(engine.EvConsumerRebuildFailed); len(l) != 0 {
		t.Fatalf("a reader was reported kept: %+v", l)
	}
}
