//go:build integration

package fleettest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// mirrorFault is a node's tracker log with faults on mirror records
// only: lose sends none and loses the answer (the step is unknown, never
// written); land writes it and loses the answer (unknown, written), as a
// holder that dies between its append and its answer does.
type mirrorFault struct {
	statelog.Log
	lose, land atomic.Bool
	mu         sync.Mutex
	blind      bool
	landed     atomic.Int32
}

func (m *mirrorFault) Publish(ctx context.Context, subject string, data []byte, msgID string, expect *uint64) (statelog.PubAck, error) {
	rec, err := record.Decode(data)
	if err != nil || rec.Kind != trackrec.KindMirrorEdges || !m.lose.Load() && !m.land.Load() {
		return m.Log.Publish(ctx, subject, data, msgID, expect)
	}
	if m.land.Load() {
		if _, err := m.Log.Publish(ctx, subject, data, msgID, expect); err != nil {
			return statelog.PubAck{}, err
		}
		m.landed.Add(1)
	}
	m.mu.Lock()
	m.blind = true
	m.mu.Unlock()
	return statelog.PubAck{}, statelog.ErrNoAnswer
}

func (m *mirrorFault) LastOnSubject(ctx context.Context, subject string) (statelog.StoredMsg, error) {
	m.mu.Lock()
	blind := m.blind
	m.blind = false
	m.mu.Unlock()
	if blind {
		return statelog.StoredMsg{}, errors.New("mirrorFault: the lookup after the lost answer is refused")
	}
	return m.Log.LastOnSubject(ctx, subject)
}

// aheadClock is the wall clock a minute on: owed mirrors are past the
// duty's 30 s grace as soon as they are owed.
type aheadClock struct{}

func (aheadClock) Now() time.Time { return time.Now().Add(time.Minute) }

func holderOf(c *fleettest.Cluster, duty string) int {
	for i := 0; i < c.Size(); i++ {
		if n := c.Node(i); n != nil {
			for _, s := range n.Duties().Local() {
				if s.Duty == duty && s.Held {
					return i
				}
			}
		}
	}
	return -1
}

func waitHolder(t *testing.T, c *fleettest.Cluster, not int) int {
	t.Helper()
	h := -1
	enginetest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if h = holderOf(c, tracker.DutyName); h < 0 || h == not {
			return fmt.Errorf("the tracker duty is held by n%d", h+1)
		}
		return nil
	})
	return h
}

// TestRepairExactlyOnceAcrossHolders: a dependencies gesture on one node
// loses both mirror steps (unknown, never written); the tracker duty's
// holder finishes them, but its own appends land and lose their answers,
// and it is stopped there; the next holder takes the duty and the owed
// mirrors end finished: each step's id is on the log exactly once, no
// node owes a mirror, every node holds both mirror edges, and the
// gesture run again under its op id appends nothing.
func TestRepairExactlyOnceAcrossHolders(t *testing.T) {
	faults := make([]*mirrorFault, 3)
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.Clock, cfg.DutyTTL = aheadClock{}, 2*time.Second
		cfg.Hooks.WrapLog = func(d engine.Domain, l statelog.Log) statelog.Log {
			if d != engine.DomainTracker {
				return l
			}
			faults[i] = &mirrorFault{Log: l}
			return faults[i]
		}
	}})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := waitHolder(t, c, -1)
	a := (h + 1) % 3
	svc := c.Node(a).Tracker()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 3)
	for i := range keys {
		iw, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprint("item ", i)})
		if err != nil || iw.Item == nil {
			t.Fatalf("create: %+v %v", iw, err)
		}
		keys[i] = iw.Item.Key
	}
	faults[a].lose.Store(true)
	faults[h].land.Store(true)
	w := engine.WriteOptions{OpID: mintKey(t)}
	patch := tracker.ItemPatch{AddEdges: []tracker.Edge{{Kind: tracker.EdgeDependsOn, Key: keys[1]}, {Kind: tracker.EdgeRelatesTo, Key: keys[2]}}}
	out, err := svc.UpdateWorkItem(ctx, w, keys[0], 0, patch)
	if err != nil || out.Outcome != engine.Unknown || len(out.OneSided) != 2 {
		t.Fatalf("the gesture: %+v %v", out, err)
	}
	faults[a].lose.Store(false)
	enginetest.CheckFor(t, 60*time.Second, 50*time.Millisecond, func() error {
		if faults[h].landed.Load() == 0 {
			return errors.New("the holder has not written a repair yet")
		}
		return nil
	})
	c.Stop(h) // the holder stops with its repair unanswered
	next := waitHolder(t, c, h)
	t.Logf("n%d held the duty and stopped after its repair landed unanswered; n%d holds it now", h+1, next+1)
	enginetest.CheckFor(t, 60*time.Second, 100*time.Millisecond, func() error { return finished(ctx, c, h, out) })
	if err := c.Start(h); err != nil {
		t.Fatal(err)
	}
	before := logLen(ctx, t, c.Node(a))
	again, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: out.OpID}, keys[0], 0, patch)
	if err != nil || again.Outcome != engine.Applied || len(again.OneSided) != 0 {
		t.Fatalf("the gesture again: %+v %v", again, err)
	}
	if n := logLen(ctx, t, c.Node(a)) - before; n != 0 {
		t.Fatalf("the gesture run again appended %d records the duty had finished", n)
	}
}

// finished checks the repair on every running node but skip: each mirror
// step on the log once, nothing owed, both mirror edges held.
func finished(ctx context.Context, c *fleettest.Cluster, skip int, out tracker.ItemWrite) error {
	var any0 = -1
	for i := 0; i < c.Size(); i++ {
		if i != skip && c.Node(i) != nil {
			any0 = i
			break
		}
	}
	msgs, err := fleettest.ReadLog(ctx, c.Node(any0).Log(engine.DomainTracker))
	if err != nil {
		return err
	}
	ids := map[string]int{}
	for _, m := range msgs {
		ids[m.MsgID]++
	}
	mirrors := 0
	for _, st := range out.Steps {
		if st.Action != tracker.MirrorStepVerb {
			continue
		}
		mirrors++
		if ids[st.OpID] != 1 {
			return fmt.Errorf("mirror step %s is on the log %d times", st.OpID, ids[st.OpID])
		}
	}
	if mirrors == 0 {
		// The walk stopped at the first mirror: name the owed steps from
		// the log's mirror records instead.
		for _, m := range msgs {
			if rec, err := record.Decode(m.Data); err == nil && rec.Kind == trackrec.KindMirrorEdges && ids[m.MsgID] != 1 {
				return fmt.Errorf("mirror %s is on the log %d times", m.MsgID, ids[m.MsgID])
			}
		}
	}
	for i := 0; i < c.Size(); i++ {
		n := c.Node(i)
		if i == skip || n == nil {
			continue
		}
		var owed, edges int
		if err := n.DB().QueryRowContext(ctx, `SELECT count(*) FROM tracker_mirror_due`).Scan(&owed); err != nil {
			return err
		}
		if err := n.DB().QueryRowContext(ctx, `SELECT count(*) FROM tracker_edges WHERE authored = 0`).Scan(&edges); err != nil {
			return err
		}
		if owed != 0 || edges != 2 {
			return fmt.Errorf("n%d owes %d mirrors and holds %d mirror edges", i+1, owed, edges)
		}
	}
	return nil
}

func logLen(ctx context.Context, t *testing.T, n *node.Node) uint64 {
	t.Helper()
	info, err := n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.LastSeq
}

// mintKey is a client-minted key (a bare UUIDv7): the gesture's op id a
// caller brings back.
func mintKey(t *testing.T) string {
	t.Helper()
	u, err := ledger.NewV7At(aheadClock{}.Now())
	if err != nil {
		t.Fatal(err)
	}
	return u.String()
}

// TestDutyLeavesAnEvictedHolder: a holder the fleet evicts is out of
// service, gives the duty up and takes it no more; another node holds it.
func TestDutyLeavesAnEvictedHolder(t *testing.T) {
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) { cfg.DutyTTL = 2 * time.Second }})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	h := waitHolder(t, c, -1)
	other := (h + 1) % 3
	if ev, err := c.Node(other).NodeGates().EvictNode(ctx, engine.WriteOptions{}, c.Node(h).Name()); err != nil || ev.Outcome != engine.Applied {
		t.Fatalf("evict: %+v %v", ev, err)
	}
	waitHolder(t, c, h)
	// For more than a TTL the evicted node takes nothing back. Another
	// node may hand the duty on meanwhile (a renewal a loaded machine
	// let lapse), which is not the promise; the evicted one never holds it.
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		evictedHoldsNothing(t, c, h)
	}
	waitHolder(t, c, h)
	evictedHoldsNothing(t, c, h)
}

// evictedHoldsNothing fails where the evicted node h holds a duty.
func evictedHoldsNothing(t *testing.T, c *fleettest.Cluster, h int) {
	t.Helper()
	for _, s := range c.Node(h).Duties().Local() {
		if s.Held {
			t.Fatalf("the evicted n%d holds %s", h+1, s.Duty)
		}
	}
}
