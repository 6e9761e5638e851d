package fleettest

import (
	"fmt"
	"math/rand"
	"sync"
	"time"
)

// Nemesis injects one fault at a time into a Cluster, seeded: a quiet
// period, then a fault held for a while, then its heal, until Stop. Faults:
// isolating a node (a minority of one), cutting one link (a non-transitive
// partition), slowing every link of a node, pausing a node (its links
// open and silent, its appliers and clients held), and stopping a node
// then restarting it on its data directory.
type Nemesis struct {
	c    *Cluster
	rng  *rand.Rand
	logf func(string, ...any)

	mu     sync.Mutex
	counts map[string]int
	failed []string
	stop   chan struct{}
	done   chan struct{}
}

// NewNemesis seeds a nemesis over c; logf (may be nil) hears each fault.
func NewNemesis(c *Cluster, seed int64, logf func(string, ...any)) *Nemesis {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	return &Nemesis{c: c, rng: rand.New(rand.NewSource(seed)), logf: logf, counts: map[string]int{},
		stop: make(chan struct{}), done: make(chan struct{})}
}

// Start runs the nemesis until Stop.
func (n *Nemesis) Start() { go n.run() }

func (n *Nemesis) between(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int63n(int64(hi-lo)+1))
}

// sleep waits d or until Stop; false when stopped.
func (n *Nemesis) sleep(d time.Duration) bool {
	select {
	case <-n.stop:
		return false
	case <-time.After(d):
		return true
	}
}

func (n *Nemesis) run() {
	defer close(n.done)
	size := n.c.Size()
	for {
		if !n.sleep(n.between(time.Second, 3*time.Second)) {
			return
		}
		victim := n.rng.Intn(size)
		hold := n.between(2*time.Second, 5*time.Second)
		kinds := []string{"isolate", "cut_link", "slow", "stop_restart", "pause"}
		kind := kinds[n.rng.Intn(len(kinds))]
		n.logf("nemesis: %s n%d for %v", kind, victim+1, hold)
		switch kind {
		case "isolate":
			n.c.Isolate(victim)
			n.sleep(hold)
			n.c.HealLinks()
		case "cut_link":
			other := (victim + 1 + n.rng.Intn(size-1)) % size
			n.c.Proxies[victim][other].Cut()
			n.c.Proxies[other][victim].Cut()
			n.sleep(hold)
			n.c.HealLinks()
		case "slow":
			n.c.Slow(victim, n.between(20*time.Millisecond, 80*time.Millisecond))
			n.sleep(hold)
			n.c.HealLinks()
		case "pause":
			n.c.Pause(victim)
			n.sleep(hold)
			n.c.HealLinks()
		case "stop_restart":
			n.c.Stop(victim)
			n.sleep(hold)
			if err := n.c.Start(victim); err != nil {
				n.mu.Lock()
				n.failed = append(n.failed, fmt.Sprintf("restart n%d: %v", victim+1, err))
				n.mu.Unlock()
			}
		}
		n.mu.Lock()
		n.counts[kind]++
		n.mu.Unlock()
	}
}

// Stop ends the nemesis, heals every link and starts every stopped node.
func (n *Nemesis) Stop() error {
	close(n.stop)
	<-n.done
	n.c.HealLinks()
	for i := 0; i < n.c.Size(); i++ {
		if n.c.Node(i) == nil {
			if err := n.c.Start(i); err != nil {
				return fmt.Errorf("restart n%d after the nemesis: %w", i+1, err)
			}
		}
	}
	return nil
}

// Counts is how many faults of each kind were injected, and the restarts
// that failed (each one retried by Stop).
func (n *Nemesis) Counts() (map[string]int, []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := map[string]int{}
	for k, v := range n.counts {
		out[k] = v
	}
	return out, append([]string(nil), n.failed...)
}
