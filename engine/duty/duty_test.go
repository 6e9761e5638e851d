package duty_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/duty"
	"github.com/crewlet/crewlet/engine/enginetest"
)

const ttl = time.Second

func startBroker(t *testing.T) jetstream.JetStream {
	t.Helper()
	b, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "duty", StoreDir: t.TempDir(), MaxStore: 1 << 30, Sync: broker.Sync{Always: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	return b.JS
}

// runners counts the nodes running a duty's function at once, and which.
type runners struct {
	mu      sync.Mutex
	now     map[string]bool
	overlap atomic.Int32
	ran     map[string]int
}

func newRunners() *runners { return &runners{now: map[string]bool{}, ran: map[string]int{}} }

func (r *runners) job(node string) duty.Job {
	return duty.Job{Name: "tracker", Run: func(ctx context.Context, _ *slog.Logger) error {
		r.mu.Lock()
		if len(r.now) > 0 {
			r.overlap.Add(1)
		}
		r.now[node] = true
		r.ran[node]++
		r.mu.Unlock()
		<-ctx.Done()
		r.mu.Lock()
		delete(r.now, node)
		r.mu.Unlock()
		return nil
	}}
}

func (r *runners) running() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.now {
		out = append(out, n)
	}
	return out
}

func open(t *testing.T, js jetstream.JetStream, node string, eligible func() *engine.Refusal) *duty.Duties {
	t.Helper()
	d, err := duty.Open(context.Background(), duty.Config{JS: js, Node: node, TTL: ttl, Eligible: eligible})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(d.Close)
	return d
}

func holderOf(t *testing.T, d *duty.Duties) duty.Holder {
	t.Helper()
	hs, err := d.Holders(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Duty == "tracker" {
			return h
		}
	}
	t.Fatalf("no tracker duty in %+v", hs)
	return duty.Holder{}
}

// TestOneHolderAndHandOverOnClose: three nodes campaign for one duty;
// exactly one runs it, the lease names it and every node reads the same
// holder; closing the holder hands the duty over at once (well inside a
// TTL), to exactly one other node, with a new term, and no two nodes ever
// ran the function together.
func TestOneHolderAndHandOverOnClose(t *testing.T) {
	js := startBroker(t)
	r := newRunners()
	ds := map[string]*duty.Duties{}
	for _, n := range []string{"n1", "n2", "n3"} {
		ds[n] = open(t, js, n, nil)
		if err := ds[n].Start(r.job(n)); err != nil {
			t.Fatal(err)
		}
	}
	enginetest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	first := r.running()[0]
	time.Sleep(2 * ttl) // renewals keep it where it is
	if got := r.running(); len(got) != 1 || got[0] != first {
		t.Fatalf("the duty moved without a cause: %v, was %s", got, first)
	}
	h := holderOf(t, ds["n1"])
	if h.Node != first || h.Term == 0 || h.Since == nil {
		t.Fatalf("the lease says %+v, the runner is %s", h, first)
	}
	for n, d := range ds {
		if st := d.Local(); len(st) != 1 || st[0].Held != (n == first) {
			t.Errorf("%s: local state %+v", n, st)
		}
	}
	t0 := time.Now()
	ds[first].Close()
	enginetest.CheckFor(t, 5*time.Second, 5*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 || got[0] == first {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	if took := time.Since(t0); took > ttl {
		t.Errorf("a clean hand-over took %v, not inside the TTL %v", took, ttl)
	}
	var other *duty.Duties
	for n, d := range ds {
		if n != first {
			other = d
		}
	}
	h2 := holderOf(t, other)
	if h2.Node == first || h2.Node == "" || h2.Term <= h.Term {
		t.Fatalf("after the hand-over the lease says %+v (was %+v)", h2, h)
	}
	if n := r.overlap.Load(); n != 0 {
		t.Fatalf("two nodes ran the duty at once %d times", n)
	}
}

// TestKilledHolderExpires: a lease a killed holder left behind (written
// as its process would have, never renewed again) keeps the duty held
// until the TTL removes it, and not a moment longer than a TTL and a
// try: then a live node takes it.
func TestKilledHolderExpires(t *testing.T) {
	js := startBroker(t)
	d := open(t, js, "n2", nil)
	kv, err := js.KeyValue(context.Background(), duty.Bucket)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	data, _ := json.Marshal(duty.Lease{Holder: "killed", Since: now, Renew: now, Term: 1})
	if _, err := kv.Create(context.Background(), "duty.tracker", data); err != nil {
		t.Fatal(err)
	}
	t0 := time.Now()
	r := newRunners()
	if err := d.Start(r.job("n2")); err != nil {
		t.Fatal(err)
	}
	if h := holderOf(t, d); h.Node != "killed" {
		t.Fatalf("the dead holder's lease reads %+v", h)
	}
	enginetest.CheckFor(t, 5*ttl, 10*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	took := time.Since(t0)
	if took < ttl*3/4 || took > ttl*2 {
		t.Fatalf("the duty was taken %v after the holder died; the TTL is %v", took, ttl)
	}
	if h := holderOf(t, d); h.Node != "n2" {
		t.Fatalf("the lease reads %+v", h)
	}
}

// TestOutOfServiceHandsOver: a holder whose node goes out of service
// stops the function and gives the lease up; another node takes it, and
// the first takes nothing while it stays out.
func TestOutOfServiceHandsOver(t *testing.T) {
	js := startBroker(t)
	r := newRunners()
	var out atomic.Bool
	d1 := open(t, js, "n1", func() *engine.Refusal {
		if out.Load() {
			return engine.Refuse(engine.CodeEvicted, "evicted")
		}
		return nil
	})
	if err := d1.Start(r.job("n1")); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	d2 := open(t, js, "n2", nil)
	if err := d2.Start(r.job("n2")); err != nil {
		t.Fatal(err)
	}
	out.Store(true)
	enginetest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 || got[0] != "n2" {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	time.Sleep(ttl)
	if d1.Local()[0].Held || r.ran["n1"] != 1 {
		t.Fatalf("the node out of service took the duty back: %+v, ran %v", d1.Local(), r.ran)
	}
}

// TestHandOverAndNames: HandOver gives the duty up to another node; a
// name outside the alphabet, a second start and an unknown duty are
// refused with a code.
func TestHandOverAndNames(t *testing.T) {
	js := startBroker(t)
	r := newRunners()
	d1, d2 := open(t, js, "n1", nil), open(t, js, "n2", nil)
	if err := d1.Start(r.job("n1")); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	if err := d2.Start(r.job("n2")); err != nil {
		t.Fatal(err)
	}
	if err := d1.HandOver(context.Background(), "tracker"); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if got := r.running(); len(got) != 1 || got[0] != "n2" {
			return fmt.Errorf("running on %v", got)
		}
		return nil
	})
	for _, bad := range []duty.Job{{Name: "Bad Name", Run: r.job("x").Run}, {Name: "tracker", Run: r.job("x").Run}, {Name: "norun"}} {
		err := d1.Start(bad)
		if ref, ok := engine.AsRefusal(err); !ok || ref.Code != engine.CodeInvalidArgument {
			t.Errorf("Start(%q) = %v, not invalid_argument", bad.Name, err)
		}
	}
	if ref, ok := engine.AsRefusal(d1.HandOver(context.Background(), "nope")); !ok || ref.Code != engine.CodeNotFound {
		t.Errorf("HandOver of an unknown duty: %v", ref)
	}
}
