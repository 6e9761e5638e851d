//go:build integration

package broker_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// combineRig is a real embedded broker syncing always, its connection
// through a proxy that can lose acks, and a log on a stream made as a node
// makes one on its embedded broker (atomic batches allowed).
type combineRig struct {
	b     *broker.Embedded
	proxy *enginetest.AckDropper
	log   *broker.Log
}

func newCombineRig(t *testing.T) *combineRig {
	r := &combineRig{}
	var err error
	r.b, err = broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "c1", StoreDir: t.TempDir(), Sync: broker.Sync{Always: true}, MaxStore: 1 << 30,
		ClientURL: func(u string) string { r.proxy = enginetest.NewAckDropper(t, u); return r.proxy.URL() }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.b.Close)
	s, err := broker.EnsureStream(context.Background(), r.b.JS, broker.StreamSpec{Name: "COMBINE", Subjects: []string{"combine.>"},
		MaxBytes: 256 << 20, Duplicates: 2 * time.Minute, AtomicBatches: true}, enginetest.Logger())
	if err != nil {
		t.Fatal(err)
	}
	if !s.CachedInfo().Config.AllowAtomicPublish {
		t.Fatal("the stream was created without atomic publish")
	}
	r.log = broker.NewLog(r.b.JS, s, "combine", "c1", enginetest.Logger())
	return r
}

// appended is one append's answer.
type appended struct {
	id      string
	subject string
	ack     statelog.PubAck
	err     error
}

// storm runs writers goroutines, each appending per records on its own
// subject with its own op ids and the expected last sequence it last saw,
// each within wait, and returns every answer. id decides the op id of writer w's i-th
// record (a retry passes an id already used).
func (r *combineRig) storm(t *testing.T, writers, per int, wait time.Duration, id func(w, i int) string) []appended {
	var mu sync.Mutex
	var out []appended
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			subject := fmt.Sprintf("combine.w%d", w)
			var last uint64
			if m, err := r.log.LastOnSubject(context.Background(), subject); err == nil {
				last = m.Seq
			}
			for i := 0; i < per; i++ {
				a := appended{id: id(w, i), subject: subject}
				for round := 0; round < 5; round++ {
					ctx, cancel := context.WithTimeout(context.Background(), wait)
					a.ack, a.err = r.log.Publish(ctx, subject, []byte("record "+a.id), a.id, &last)
					cancel()
					if a.err == nil && !a.ack.Duplicate {
						last = a.ack.Seq
					}
					if a.err == nil {
						break
					}
					// A lost answer's append may land after it was given
					// up on: anchor on what landed, and where that was
					// still moving, send again, as the write path does.
					if m, err := r.log.LastOnSubject(context.Background(), subject); err == nil {
						last = m.Seq
					}
					if !errors.As(a.err, new(*statelog.WrongSequenceError)) {
						break
					}
				}
				mu.Lock()
				out = append(out, a)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return out
}

// TestCombinedAppendsLandOnceAtTheirAnswers: 64 writers appending at once
// through one log are combined into atomic batches, and every answer is
// what a single append would have answered: the sequence it names holds
// that record, nothing lands twice, nothing is lost.
func TestCombinedAppendsLandOnceAtTheirAnswers(t *testing.T) {
	r := newCombineRig(t)
	const writers, per = 64, 20
	got := r.storm(t, writers, per, 30*time.Second, func(w, i int) string { return fmt.Sprintf("op-%d-%d", w, i) })
	r.checkEachAtItsSequence(t, got)
	if r.log.Batches().Taken == 0 {
		t.Fatalf("64 writers at once were never combined into a batch")
	}
	info, err := r.log.Info(context.Background())
	if err != nil || info.LastSeq != writers*per {
		t.Fatalf("the log holds %d records, want %d (%v)", info.LastSeq, writers*per, err)
	}
	t.Logf("%d appends, %d of them in %d batches", writers*per, r.log.Batches().Records, r.log.Batches().Taken)
}

// checkEachAtItsSequence wants every answer applied at a sequence that
// holds its own record, and no sequence answered twice.
func (r *combineRig) checkEachAtItsSequence(t *testing.T, got []appended) {
	t.Helper()
	seen := map[uint64]string{}
	for _, a := range got {
		if a.err != nil {
			t.Fatalf("%s: %v", a.id, a.err)
		}
		if prev, ok := seen[a.ack.Seq]; ok && prev != a.id {
			t.Fatalf("sequence %d answered for %s and %s", a.ack.Seq, prev, a.id)
		}
		seen[a.ack.Seq] = a.id
		m, err := r.log.Get(context.Background(), a.ack.Seq)
		if err != nil || m.MsgID != a.id || m.Subject != a.subject {
			t.Fatalf("%s answered at %d, which holds %q on %s (%v)", a.id, a.ack.Seq, m.MsgID, m.Subject, err)
		}
	}
}

// TestCombinedRetriesAnswerTheirFirstCopy: a storm of appends under op ids
// that already landed, beside new ones, so batches carry duplicates (the
// broker refuses such a batch whole): every retry is answered as the
// duplicate it is, at its first copy's sequence, and every new one lands
// once.
func TestCombinedRetriesAnswerTheirFirstCopy(t *testing.T) {
	r := newCombineRig(t)
	const writers, per = 48, 6
	first := r.storm(t, writers, per, 30*time.Second, func(w, i int) string { return fmt.Sprintf("op-%d-%d", w, i) })
	r.checkEachAtItsSequence(t, first)
	at := map[string]uint64{}
	for _, a := range first {
		at[a.id] = a.ack.Seq
	}
	// Odd writers bring back their first ids; even ones write new ones.
	again := r.storm(t, writers, per, 30*time.Second, func(w, i int) string {
		if w%2 == 1 {
			return fmt.Sprintf("op-%d-%d", w, i)
		}
		return fmt.Sprintf("new-%d-%d", w, i)
	})
	for _, a := range again {
		seq, retried := at[a.id]
		switch {
		case retried && (a.err != nil || !a.ack.Duplicate || a.ack.Seq != seq):
			t.Fatalf("retry %s: want a duplicate at %d, got %+v %v", a.id, seq, a.ack, a.err)
		case !retried && (a.err != nil || a.ack.Duplicate):
			t.Fatalf("new %s: %+v %v", a.id, a.ack, a.err)
		}
	}
	if r.log.Batches().Refused == 0 {
		t.Fatal("no batch carried a retry: the refused batch's path was not taken")
	}
	var fresh []appended
	for _, a := range again {
		if _, retried := at[a.id]; !retried {
			fresh = append(fresh, a)
		}
	}
	r.checkEachAtItsSequence(t, fresh)
	info, err := r.log.Info(context.Background())
	if want := uint64(writers*per + writers/2*per); err != nil || info.LastSeq != want {
		t.Fatalf("the log holds %d records, want %d (%v)", info.LastSeq, want, err)
	}
}

// TestCombinedLostAnswers: batch answers lost on the way back (the
// proxy drops acks while the storm runs) are answered ErrNoAnswer, never
// a guess; every append so answered is found on the log or not at all,
// once, and sent again under its op id it is answered as the duplicate
// of its one copy, or lands now.
func TestCombinedLostAnswers(t *testing.T) {
	r := newCombineRig(t)
	const writers, per = 64, 10
	var got []appended
	// A storm of single appends (too few under way to combine) meets no
	// batch: storm again until one has; each storm writes ids of its own.
	for storm := 0; storm < 8 && r.log.Batches().Lost == 0; storm++ {
		r.proxy.DropAcks(2)
		r.proxy.DropBatchAcks(2)
		// An append whose answer is lost waits out its context: keep it short.
		got = append(got, r.storm(t, writers, per, 2*time.Second, func(w, i int) string { return fmt.Sprintf("op-%d-%d-%d", storm, w, i) })...)
		r.proxy.Heal()
	}
	if r.log.Batches().Lost == 0 {
		t.Fatal("no batch was combined in 8 storms")
	}
	var lost, kept []appended
	for _, a := range got {
		switch {
		case a.err == nil:
			kept = append(kept, a)
		case errors.Is(a.err, statelog.ErrNoAnswer):
			lost = append(lost, a)
		default:
			t.Fatalf("%s: %v", a.id, a.err)
		}
	}
	if r.proxy.Dropped.Load() == 0 || len(lost) == 0 {
		t.Fatalf("no answer was lost (dropped %d)", r.proxy.Dropped.Load())
	}
	r.checkEachAtItsSequence(t, kept)
	for _, a := range lost {
		ack, err := r.log.Publish(context.Background(), a.subject, []byte("record "+a.id), a.id, nil)
		if err != nil {
			t.Fatalf("resending %s: %v", a.id, err)
		}
		m, err := r.log.Get(context.Background(), ack.Seq)
		if err != nil || m.MsgID != a.id {
			t.Fatalf("resent %s answered at %d holding %q (%v)", a.id, ack.Seq, m.MsgID, err)
		}
	}
	// Every op id is on the log exactly once.
	info, err := r.log.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for seq := info.FirstSeq; seq <= info.LastSeq; seq++ {
		m, err := r.log.Get(context.Background(), seq)
		if err != nil {
			t.Fatal(err)
		}
		if ids[m.MsgID] {
			t.Fatalf("%s landed twice", m.MsgID)
		}
		ids[m.MsgID] = true
	}
	if len(ids) != len(got) {
		t.Fatalf("%d distinct records on the log, want %d", len(ids), len(got))
	}
	t.Logf("%d answers lost of %d; batches %+v", len(lost), len(got), r.log.Batches())
}
