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

// Load is a steady load on every node of a Cluster: one writer updating
// the node's own item and one linearizable reader, each in a loop.
type Load struct {
	c    *Cluster
	keys []string

	mu   sync.Mutex
	obs  []Obs
	stop chan struct{}
	wg   sync.WaitGroup
}

// StartLoad starts the load; keys[i] is the item node i's writer updates.
func StartLoad(c *Cluster, keys []string) *Load {
	l := &Load{c: c, keys: keys, stop: make(chan struct{})}
	for i := 0; i < c.Size(); i++ {
		l.wg.Add(2)
		go l.loop(i, true)
		go l.loop(i, false)
	}
	return l
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
		nd := l.c.Node(i)
		if nd == nil {
			continue
		}
		// The call's own deadline is past the 5 s write wait, so a write
		// answers pending rather than running out of time here.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		o := Obs{Node: i, Write: write, Start: time.Now()}
		if write {
			id, _ := uuid.NewV7()
			title := fmt.Sprintf("n%d-%d", i+1, n)
			w, err := nd.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{OpID: id.String()}, l.keys[i], 0, tracker.ItemPatch{Title: &title})
			o.Outcome = string(w.Outcome)
			if err != nil {
				o.Outcome = string(engine.CodeOf(err))
			}
		} else {
			_, err := nd.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, l.keys[i])
			o.Outcome = "ok"
			if err != nil {
				o.Outcome = string(engine.CodeOf(err))
			}
		}
		cancel()
		o.End = time.Now()
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
