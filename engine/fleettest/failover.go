package fleettest

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/tracker"
)

// Obs is one answer the steady load got: a write's outcome (applied,
// pending, unknown) or a linearizable read's ("ok"), or the refusal code
// either was answered with.
type Obs struct {
	Node       int
	Write      bool
	Start, End time.Time
	Outcome    string
}

// Call is one call of a steady load on node i: a write (the n-th) or a
// linearizable read. It answers the outcome, or ok false where node i is
// not running (nothing is recorded then).
type Call func(i int, write bool, n int) (outcome string, ok bool)

// Load is a steady load on every node of a fleet: one writer and one
// linearizable reader per node, each calling in a loop.
type Load struct {
	call Call

	mu   sync.Mutex
	obs  []Obs
	stop chan struct{}
	wg   sync.WaitGroup
}

// NewLoad starts a load of call on size nodes.
func NewLoad(size int, call Call) *Load {
	l := &Load{call: call, stop: make(chan struct{})}
	for i := 0; i < size; i++ {
		l.wg.Add(2)
		go l.loop(i, true)
		go l.loop(i, false)
	}
	return l
}

// StartLoad starts the load on a Cluster; keys[i] is the item node i's
// writer updates and its reader reads.
func StartLoad(c *Cluster, keys []string) *Load {
	return NewLoad(c.Size(), func(i int, write bool, n int) (string, bool) {
		nd := c.Node(i)
		if nd == nil {
			return "", false
		}
		// The call's own deadline is past the write's budget, so a write
		// answers rather than running out of time here.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if !write {
			if _, err := nd.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, keys[i]); err != nil {
				return string(engine.CodeOf(err)), true
			}
			return "ok", true
		}
		id, _ := uuid.NewV7()
		title := fmt.Sprintf("n%d-%d", i+1, n)
		w, err := nd.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{OpID: id.String()}, keys[i], 0, tracker.ItemPatch{Title: &title})
		if err != nil {
			return string(engine.CodeOf(err)), true
		}
		return string(w.Outcome), true
	})
}

// Stop ends the load and waits for its calls to return.
func (l *Load) Stop() {
	close(l.stop)
	l.wg.Wait()
}

func (l *Load) loop(i int, write bool) {
	defer l.wg.Done()
	for n := 0; ; n++ {
		select {
		case <-l.stop:
			return
		case <-time.After(20 * time.Millisecond):
		}
		o := Obs{Node: i, Write: write, Start: time.Now()}
		out, ok := l.call(i, write, n)
		if !ok {
			continue
		}
		o.Outcome, o.End = out, time.Now()
		l.mu.Lock()
		l.obs = append(l.obs, o)
		l.mu.Unlock()
	}
}

// Since is every answer that ended at or after t.
func (l *Load) Since(t time.Time) []Obs {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []Obs
	for _, o := range l.obs {
		if !o.End.Before(t) {
			out = append(out, o)
		}
	}
	return out
}

// Roles is who leads what on the tracker log: the stream's leader and,
// for each node j, the node leading j's consumer (-1: none or unknown).
type Roles struct {
	Stream  int
	Readers []int
}

// LeadsReaders is the other nodes whose consumers node i leads.
func (r Roles) LeadsReaders(i int) []int {
	var out []int
	for j, l := range r.Readers {
		if j != i && l == i {
			out = append(out, j)
		}
	}
	return out
}

func (r Roles) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "stream n%d; readers", r.Stream+1)
	for j, l := range r.Readers {
		fmt.Fprintf(&b, " n%d<-n%d", j+1, l+1)
	}
	return b.String()
}

// ReadRoles reads the tracker log's leaders through any running node.
func ReadRoles(ctx context.Context, c *Cluster) (Roles, error) {
	var lg *broker.Log
	for i := 0; i < c.Size() && lg == nil; i++ {
		if n := c.Node(i); n != nil {
			lg = n.Log(engine.DomainTracker)
		}
	}
	if lg == nil {
		return Roles{}, fmt.Errorf("no node is running")
	}
	index := func(name string) int {
		for i := 0; i < c.Size(); i++ {
			if c.Config(i).Name == name {
				return i
			}
		}
		return -1
	}
	s, err := lg.StreamLead(ctx)
	if err != nil {
		return Roles{}, err
	}
	r := Roles{Stream: index(s.Leader)}
	for j := 0; j < c.Size(); j++ {
		rl, err := lg.ReaderLead(ctx, c.Config(j).Name)
		if err != nil {
			return Roles{}, fmt.Errorf("n%d's reader: %w", j+1, err)
		}
		r.Readers = append(r.Readers, index(rl.Leader))
	}
	return r, nil
}

// Recovery is what one node's loss cost the survivors.
type Recovery struct {
	Case   string
	Victim int
	Roles  Roles
	// Write and Read are how long after the kill every survivor's writes
	// answered applied and its linearizable reads answered again: the
	// end of the first such answer, on each survivor, to a call started
	// at or after the kill, the latest over the survivors.
	Write, Read time.Duration
	// Election is how long the survivors took to name another stream
	// leader (zero when the victim did not lead it).
	Election time.Duration
	// Counts is the survivors' answers meanwhile (ended after the kill
	// and before both had recovered), by outcome.
	Counts map[string]int
	// Stalled counts writes that took longer than the write's budget (the
	// 5 s wait and a margin for the append) to answer at all.
	Stalled int
}

func (r Recovery) String() string {
	var ks []string
	for k, n := range r.Counts {
		ks = append(ks, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(ks)
	return fmt.Sprintf("%s n%d (%s): election %v write %v read %v; %s; stalled %d", r.Case, r.Victim+1, r.Roles,
		r.Election.Round(time.Millisecond), r.Write.Round(time.Millisecond), r.Read.Round(time.Millisecond), strings.Join(ks, " "), r.Stalled)
}

// WriteBudget is how long a write may take to answer: the seeds' 5 s
// wait for its own record, past an append bounded by the same 5 s.
const WriteBudget = 10 * time.Second

// Figures is one case's line: p50 and max of both recoveries, and the
// answers summed over its kills.
func Figures(kase string, recs []Recovery, absent int) string {
	if len(recs) == 0 {
		return fmt.Sprintf("%-14s no kills (the case arose in none of %d tries)", kase, absent)
	}
	var ws, rs, es []time.Duration
	counts := map[string]int{}
	stalled := 0
	for _, r := range recs {
		ws, rs, es = append(ws, r.Write), append(rs, r.Read), append(es, r.Election)
		for k, n := range r.Counts {
			counts[k] += n
		}
		stalled += r.Stalled
	}
	var ks []string
	for k, n := range counts {
		ks = append(ks, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(ks)
	p := func(ds []time.Duration) string {
		sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
		return fmt.Sprintf("p50 %v max %v", ds[len(ds)/2].Round(time.Millisecond), ds[len(ds)-1].Round(time.Millisecond))
	}
	return fmt.Sprintf("%-14s kills %d (absent %d): election %s; write %s; read %s; answers %s; stalled past %v %d",
		kase, len(recs), absent, p(es), p(ws), p(rs), strings.Join(ks, " "), WriteBudget, stalled)
}
