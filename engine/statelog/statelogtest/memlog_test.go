package statelogtest

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/statelog"
)

var ctx = context.Background()

func u64(v uint64) *uint64 { return &v }

// TestAppendOrder: the broker's answers to appends, as research/stack.md
// observed JetStream give them, in both topologies' order.
func TestAppendOrder(t *testing.T) {
	for _, dedupFirst := range []bool{false, true} {
		s := NewStream(Options{DedupFirst: dedupFirst})
		l := s.Log("n1")
		ack, err := l.Publish(ctx, "a", []byte("1"), "op1", u64(0))
		if err != nil || ack != (statelog.PubAck{Seq: 1}) {
			t.Fatalf("first append: %+v %v", ack, err)
		}
		// Expecting 0 on a subject that holds a message: wrong sequence,
		// naming the subject's last.
		var wrong *statelog.WrongSequenceError
		if _, err := l.Publish(ctx, "a", []byte("2"), "op2", u64(0)); !errors.As(err, &wrong) || wrong.Last != 1 {
			t.Fatalf("stale expectation: %v", err)
		}
		// A repeated id with a stale expectation: refused first on R1,
		// collapsed first on R3.
		ack, err = l.Publish(ctx, "a", []byte("1"), "op1", u64(0))
		if dedupFirst {
			if err != nil || ack != (statelog.PubAck{Seq: 1, Duplicate: true}) {
				t.Fatalf("R3 retry: %+v %v", ack, err)
			}
		} else if !errors.As(err, &wrong) {
			t.Fatalf("R1 retry: %+v %v", ack, err)
		}
		// With the right expectation, or none, a repeated id is a duplicate.
		if ack, err := l.Publish(ctx, "a", []byte("1"), "op1", u64(1)); err != nil || !ack.Duplicate || ack.Seq != 1 {
			t.Fatalf("retry expecting the copy: %+v %v", ack, err)
		}
		// Past the window the id is forgotten.
		s.Advance(2 * time.Minute)
		if ack, err := l.Publish(ctx, "a", []byte("1"), "op1", nil); err != nil || ack.Duplicate || ack.Seq != 2 {
			t.Fatalf("after the window: %+v %v", ack, err)
		}
		if m, err := l.LastOnSubject(ctx, "a"); err != nil || m.Seq != 2 || m.MsgID != "op1" {
			t.Fatalf("last on a: %+v %v", m, err)
		}
		if _, err := l.LastOnSubject(ctx, "b"); !errors.Is(err, statelog.ErrNoMessage) {
			t.Fatalf("last on an empty subject: %v", err)
		}
		if _, err := l.Get(ctx, 3); !errors.Is(err, statelog.ErrNoMessage) {
			t.Fatalf("get past the end: %v", err)
		}
	}
}

// TestPublishFaults: a lost answer lands, a failed append does not.
func TestPublishFaults(t *testing.T) {
	s := NewStream(Options{})
	l := s.Log("n1")
	s.LoseAck(nil)
	if _, err := l.Publish(ctx, "a", nil, "op1", nil); !errors.Is(err, statelog.ErrNoAnswer) {
		t.Fatalf("lost answer: %v", err)
	}
	s.FailPublish(func(subject, _ string) bool { return subject == "b" }, nil)
	if ack, err := l.Publish(ctx, "a", nil, "op2", nil); err != nil || ack.Seq != 2 {
		t.Fatalf("an append the fault does not select: %+v %v", ack, err)
	}
	if _, err := l.Publish(ctx, "b", nil, "op3", nil); !errors.Is(err, statelog.ErrNoAnswer) {
		t.Fatalf("failed append: %v", err)
	}
	if got := len(s.Messages()); got != 2 {
		t.Fatalf("%d messages, want 2: the lost answer's landed, the failed one's did not", got)
	}
	s.FailRead(ReadLast, nil)
	if _, err := l.LastOnSubject(ctx, "a"); !errors.Is(err, statelog.ErrNoAnswer) {
		t.Fatalf("failed read: %v", err)
	}
	if _, err := l.LastOnSubject(ctx, "a"); err != nil {
		t.Fatalf("the fault is for one read: %v", err)
	}
}

func drain(t *testing.T, sub statelog.Subscription) []statelog.Delivery {
	t.Helper()
	var out []statelog.Delivery
	for {
		select {
		case d := <-sub.C():
			out = append(out, d)
		default:
			return out
		}
	}
}

func seqs(ds []statelog.Delivery) []uint64 {
	var out []uint64
	for _, d := range ds {
		out = append(out, d.Seq)
	}
	return out
}

// TestReader: in order from the checkpoint, ack-all, a delivery lost in
// flight comes back after the ack wait unless a later ack covered it, and
// a reader that disagrees with the rows is rebuilt at the checkpoint.
func TestReader(t *testing.T) {
	s := NewStream(Options{})
	l := s.Log("n1")
	for range 3 {
		if _, err := l.Publish(ctx, "a", nil, "", nil); err != nil {
			t.Fatal(err)
		}
	}
	sub, err := l.Subscribe(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	got := drain(t, sub)
	if !slices.Equal(seqs(got), []uint64{2, 3}) || got[0].Pending != 1 {
		t.Fatalf("from checkpoint 1: %v (pending %d)", seqs(got), got[0].Pending)
	}
	if err := s.Drop("n1", 4); err != nil {
		t.Fatal(err)
	}
	_, _ = l.Publish(ctx, "a", nil, "", nil) // 4, lost in flight
	if got := drain(t, sub); len(got) != 0 {
		t.Fatalf("a dropped delivery arrived: %v", seqs(got))
	}
	_ = got[1].Ack() // acknowledges 2 and 3
	if r := s.Reader("n1"); r.AckFloor != 3 || !slices.Equal(r.AckPending, []uint64{4}) {
		t.Fatalf("after acking 3: %+v", r)
	}
	s.Advance(29 * time.Second)
	if got := drain(t, sub); len(got) != 0 {
		t.Fatalf("redelivered before the ack wait: %v", seqs(got))
	}
	s.Advance(time.Second)
	if got := drain(t, sub); !slices.Equal(seqs(got), []uint64{4}) {
		t.Fatalf("after the ack wait: %v", seqs(got))
	}
	if s.Idle("n1") {
		t.Fatal("idle with a delivery unacknowledged")
	}
	sub.Stop()
	// Reopened at 3 with 4 handed over and never acknowledged.
	sub, err = l.Subscribe(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if ev := s.TakeEvents(); len(ev) == 0 || !strings.Contains(ev[len(ev)-1], "rebuilt at 3 (delivered_past_checkpoint") {
		t.Fatalf("events: %q", ev)
	}
	got = drain(t, sub)
	if !slices.Equal(seqs(got), []uint64{4}) {
		t.Fatalf("after the rebuild: %v", seqs(got))
	}
	_ = got[0].Ack()
	if !s.Idle("n1") {
		t.Fatal("not idle with everything acknowledged")
	}
	sub.Stop()
	// Level with the checkpoint: kept as it is.
	if _, err := l.Subscribe(ctx, 4); err != nil {
		t.Fatal(err)
	}
	if ev := s.TakeEvents(); len(ev) != 0 {
		t.Fatalf("a reader level with the checkpoint was rebuilt: %q", ev)
	}
}
