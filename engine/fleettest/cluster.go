package fleettest

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/loopback"
)

// DeadAdvertise is the route address every harness broker gossips: no one
// listens there, so a peer that learns it cannot dial around a cut proxy.
const DeadAdvertise = "127.0.0.1:1"

// Options shape a harness cluster.
type Options struct {
	// Size is the number of data nodes (default 3).
	Size int
	// Configure adjusts node i's config before every open (restarts too).
	Configure func(i int, cfg *node.Config)
	// Opened runs on node i after every open (restarts too): a test wires
	// the node's surfaces there. An error fails the start.
	Opened func(i int, n *node.Node) error
}

// Cluster is a fleet of data nodes in this process, each broker's routes
// to each peer going through its own proxy.
type Cluster struct {
	t    testing.TB
	opts Options
	// Proxies[i][j] carries node i's route to node j (nil on the diagonal).
	Proxies [][]*Proxy
	cfgs    []node.Config

	mu    sync.Mutex
	nodes []*node.Node
	// paused[i] is non-nil while node i is paused; closed on resume.
	paused []chan struct{}
	// flight keeps the nodes' newest log lines for a failed test.
	flight *flight
}

// clusterSeq numbers the clusters a test process starts.
var clusterSeq atomic.Int64

// StartCluster opens every node at once (each boot waits for the meta
// leader, which needs a majority) and stops them when the test ends.
func StartCluster(t testing.TB, opts Options) *Cluster {
	t.Helper()
	if opts.Size == 0 {
		opts.Size = 3
	}
	c := &Cluster{t: t, opts: opts, nodes: make([]*node.Node, opts.Size), paused: make([]chan struct{}, opts.Size), flight: newFlight(opts.Size)}
	// Registered first, so it runs last: after the nodes stopped.
	t.Cleanup(func() { c.flight.dump(t) })
	ports := make([]string, opts.Size)
	held := make([]net.Listener, opts.Size)
	for i := range ports {
		held[i] = reserveAddr(t)
		ports[i] = held[i].Addr().String()
	}
	c.makeProxies(ports)
	root := t.TempDir()
	// A name of its own: two suites running at once on one machine pick
	// their ports from the same free pool, and a route that reached the
	// other suite's server under one shared name would join the clusters.
	name := fmt.Sprintf("fleettest-%d-%d", os.Getpid(), clusterSeq.Add(1))
	for i := 0; i < opts.Size; i++ {
		var routes []string
		for j := 0; j < opts.Size; j++ {
			if j != i {
				routes = append(routes, "nats://"+c.Proxies[i][j].Addr())
			}
		}
		c.cfgs = append(c.cfgs, node.Config{
			Name:    fmt.Sprintf("n%d", i+1),
			DataDir: fmt.Sprintf("%s/n%d", root, i+1),
			// A node stopped after its broker's peers are gone would wait
			// out the default drain on every reader.
			DrainWait: 500 * time.Millisecond,
			Stream: node.StreamConfig{
				Replicas:    3,
				ClusterWait: 90 * time.Second,
				Cluster:     node.ClusterConfig{Name: name, Listen: ports[i], Routes: routes, Advertise: DeadAdvertise},
			},
		})
		if opts.Size < 3 {
			c.cfgs[i].Stream.Replicas = opts.Size
		}
	}
	t.Cleanup(c.Close)
	// Released only now: a proxy made above cannot have taken a port a
	// broker is about to listen on.
	for _, ln := range held {
		ln.Close()
	}
	var wg sync.WaitGroup
	errs := make([]error, opts.Size)
	for i := 0; i < opts.Size; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = c.Start(i)
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("start n%d: %v", i+1, err)
		}
	}
	if err := c.Settle(time.Minute); err != nil {
		t.Fatal(err)
	}
	return c
}

// Settle waits until a linearizable read answers on every running node:
// each node's reader is then consuming, so a first write is not answered
// pending merely because the cluster has just formed.
func (c *Cluster) Settle(within time.Duration) error {
	deadline := time.Now().Add(within)
	for i := 0; i < c.Size(); i++ {
		n := c.Node(i)
		if n == nil {
			continue
		}
		for {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_, err := n.Replica(engine.DomainTracker).Read(ctx, engine.ReadOptions{Level: engine.Linearizable}, func(context.Context, *sql.Tx) error { return nil })
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("n%d answers no linearizable read %v after boot: %w", i+1, within, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// makeProxies makes Proxies: one per route, node i's to node j's port.
func (c *Cluster) makeProxies(ports []string) {
	c.Proxies = make([][]*Proxy, len(ports))
	for i := range c.Proxies {
		c.Proxies[i] = make([]*Proxy, len(ports))
		for j := range c.Proxies[i] {
			if i == j {
				continue
			}
			p, err := NewProxy(ports[j])
			if err != nil {
				c.t.Fatal(err)
			}
			c.Proxies[i][j] = p
		}
	}
}

// reserveAddr holds a free loopback port open until the cluster's
// brokers are about to listen on it.
func reserveAddr(t testing.TB) net.Listener {
	ln, err := loopback.Listen()
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// Config is node i's config as the next Start opens it.
func (c *Cluster) Config(i int) node.Config { return c.cfgs[i] }

// Size is the number of nodes.
func (c *Cluster) Size() int { return len(c.cfgs) }

// Node is node i, nil while it is stopped.
func (c *Cluster) Node(i int) *node.Node {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Start opens node i on its data directory (a restart when it ran before).
func (c *Cluster) Start(i int) error {
	cfg := c.cfgs[i]
	if c.opts.Configure != nil {
		c.opts.Configure(i, &cfg)
	}
	inner := slog.Handler(slog.DiscardHandler)
	if cfg.Logger != nil {
		inner = cfg.Logger.Handler()
	}
	cfg.Logger = slog.New(c.flight.handler(i, inner))
	// A paused node's appliers stop where they stand, inside their
	// transaction, as a stopped process's would.
	hook := cfg.Hooks.BeforeApplyCommit
	cfg.Hooks.BeforeApplyCommit = func(d engine.Domain, last uint64) error {
		c.WaitRunning(i)
		if hook != nil {
			return hook(d, last)
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		if ctx.Err() != nil {
			if s := stuck(); s != "" {
				c.flight.add(i, "goroutines waiting a minute or more when the open ran out of time:\n"+s)
			}
		}
		return err
	}
	if c.opts.Opened != nil {
		if err := c.opts.Opened(i, n); err != nil {
			n.Close()
			return err
		}
	}
	c.mu.Lock()
	c.nodes[i] = n
	c.mu.Unlock()
	return nil
}

// Stop closes node i: its appliers, its broker and its store.
func (c *Cluster) Stop(i int) {
	c.mu.Lock()
	n := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if n != nil {
		n.Close()
	}
}

// Isolate cuts every route to and from node i.
func (c *Cluster) Isolate(i int) {
	for j := range c.cfgs {
		if j != i {
			c.Proxies[i][j].Cut()
			c.Proxies[j][i].Cut()
		}
	}
}

// Slow delays every route to and from node i by d.
func (c *Cluster) Slow(i int, d time.Duration) {
	for j := range c.cfgs {
		if j != i {
			c.Proxies[i][j].Delay(d)
			c.Proxies[j][i].Delay(d)
		}
	}
}

// Pause stands in for SIGSTOP of node i inside this process: every route
// to and from it stays open and silent (its peers see no reset and no
// bytes), its appliers stop inside their next transaction, and clients
// that call WaitRunning wait, until HealLinks. Its broker's own timers run
// on, which a stopped process's would not.
func (c *Cluster) Pause(i int) {
	c.mu.Lock()
	if c.paused[i] == nil {
		c.paused[i] = make(chan struct{})
	}
	c.mu.Unlock()
	for j := range c.cfgs {
		if j != i {
			c.Proxies[i][j].Freeze()
			c.Proxies[j][i].Freeze()
		}
	}
}

// WaitRunning blocks while node i is paused.
func (c *Cluster) WaitRunning(i int) {
	c.mu.Lock()
	p := c.paused[i]
	c.mu.Unlock()
	if p != nil {
		<-p
	}
}

// HealLinks heals every proxy and resumes every paused node.
func (c *Cluster) HealLinks() {
	c.mu.Lock()
	for i, p := range c.paused {
		if p != nil {
			close(p)
			c.paused[i] = nil
		}
	}
	c.mu.Unlock()
	for _, row := range c.Proxies {
		for _, p := range row {
			if p != nil {
				p.Heal()
			}
		}
	}
}

// Close stops every node and proxy.
func (c *Cluster) Close() {
	var wg sync.WaitGroup
	for i := range c.cfgs {
		wg.Add(1)
		go func(i int) { defer wg.Done(); c.Stop(i) }(i)
	}
	wg.Wait()
	for _, row := range c.Proxies {
		for _, p := range row {
			if p != nil {
				p.Close()
			}
		}
	}
}
