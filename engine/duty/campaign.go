package duty

import (
	"context"
	"encoding/json"
	"errors"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
)

// campaign is one duty on one node: it takes the lease when vacant,
// renews it while held, runs the duty's function meanwhile, and gives it
// up when the node may hold no duty, is handed over or closes. Its fields
// below mu belong to its loop's goroutine.
type campaign struct {
	d        *Duties
	job      Job
	key      string
	kick     chan struct{}
	handover chan chan struct{}

	mu             sync.Mutex
	held           bool
	acquired, lost uint64

	rev     uint64
	lease   Lease
	lastOK  time.Time // monotonic: the last renewal the broker took
	cancel  context.CancelFunc
	runDone chan struct{}
	// notBefore holds a campaign back after it handed its duty over, so
	// another node takes it.
	notBefore time.Time
}

func (c *campaign) wake() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

func (c *campaign) state() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{Duty: c.job.Name, Held: c.held, Acquired: c.acquired, Lost: c.lost}
}

func (c *campaign) holding() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.held
}

func (c *campaign) loop() {
	defer c.d.wg.Done()
	t := time.NewTicker(c.d.renew)
	defer t.Stop()
	for {
		c.step()
		select {
		case <-c.d.stop:
			c.release("node_closing")
			return
		case done := <-c.handover:
			c.release("handed_over")
			c.notBefore = time.Now().Add(c.d.cfg.TTL)
			close(done)
		case <-c.kick:
		case <-t.C:
		}
	}
}

// step is one beat: give the duty up where this node may not hold it,
// renew it where held, try to take it where vacant.
func (c *campaign) step() {
	if ref := c.ineligible(); ref != nil {
		if c.holding() {
			c.d.log.Warn("duty_released", "duty", c.job.Name, "reason", string(ref.Code), "why", ref.Message)
			c.release("out_of_service")
		}
		return
	}
	if c.holding() {
		c.renewLease()
		return
	}
	if time.Now().Before(c.notBefore) {
		return
	}
	c.tryTake()
}

func (c *campaign) ineligible() *engine.Refusal {
	if ref := c.d.cfg.Eligible(); ref != nil {
		return ref
	}
	if c.job.Eligible != nil {
		return c.job.Eligible()
	}
	return nil
}

// tryTake creates the lease where there is none, or takes back one that
// names this node (a holding of the process before a restart).
func (c *campaign) tryTake() {
	ctx, cancel := context.WithTimeout(context.Background(), c.d.renew)
	defer cancel()
	now := c.d.cfg.Clock.Now().UTC()
	l := Lease{Holder: c.d.cfg.Node, Since: now, Renew: now}
	data, _ := json.Marshal(l)
	rev, err := c.d.kv.Create(ctx, c.key, data)
	if errors.Is(err, jetstream.ErrKeyExists) {
		e, gerr := c.d.kv.Get(ctx, c.key)
		if gerr != nil || holderOf(c.job.Name, e.Value()).Node != c.d.cfg.Node {
			return // another node holds it
		}
		rev, err = c.d.kv.Update(ctx, c.key, data, e.Revision())
	}
	if err != nil {
		return
	}
	// The term is the revision the lease was taken at, written into it
	// at once so every reader names this holding.
	l.Term = rev
	data, _ = json.Marshal(l)
	if r2, err := c.d.kv.Update(ctx, c.key, data, rev); err == nil {
		rev = r2
	} else {
		l.Term = 0
	}
	c.took(rev, l)
}

// took starts the duty's function under a holding taken at rev.
func (c *campaign) took(rev uint64, l Lease) {
	ctx, cancel := context.WithCancel(context.Background())
	c.rev, c.lease, c.lastOK, c.cancel, c.runDone = rev, l, time.Now(), cancel, make(chan struct{})
	c.mu.Lock()
	c.held = true
	c.acquired++
	c.mu.Unlock()
	c.d.log.Info("duty_acquired", "duty", c.job.Name, "term", l.Term)
	go c.run(ctx, c.runDone)
}

// run runs the duty's function until ctx ends, again a second after it
// returns early.
func (c *campaign) run(ctx context.Context, done chan struct{}) {
	defer close(done)
	log := c.d.log.With("duty", c.job.Name)
	// A profile of the node tells the duty's CPU by this label
	// (go tool pprof -tagfocus duty=embedding).
	ctx = pprof.WithLabels(ctx, pprof.Labels("duty", c.job.Name))
	pprof.SetGoroutineLabels(ctx)
	for {
		err := c.job.Run(ctx, log)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			c.d.log.Warn("duty_run_failed", "duty", c.job.Name, engine.LogErr, err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Second):
		}
	}
}

// renewLease renews the holding. A renewal refused means another node
// holds the duty now (this one's lease expired): the function stops. A
// holder that could not renew for half a TTL stops it too, before the
// lease can expire under it.
func (c *campaign) renewLease() {
	if time.Since(c.lastOK) > c.d.cfg.TTL/2 {
		c.stopRun()
		c.d.log.Warn("duty_fenced", "duty", c.job.Name, "term", c.lease.Term, "since_renewal", time.Since(c.lastOK).String())
		c.drop(true)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.d.renew)
	defer cancel()
	c.lease.Renew = c.d.cfg.Clock.Now().UTC()
	data, _ := json.Marshal(c.lease)
	rev, err := c.d.kv.Update(ctx, c.key, data, c.rev)
	switch {
	case err == nil:
		c.rev, c.lastOK = rev, time.Now()
	case errors.Is(err, jetstream.ErrKeyRevisionMismatch), errors.Is(err, jetstream.ErrKeyExists), errors.Is(err, jetstream.ErrKeyNotFound):
		c.stopRun()
		c.d.log.Warn("duty_lost", "duty", c.job.Name, "term", c.lease.Term, engine.LogErr, err.Error())
		c.drop(true)
	}
}

// release ends a holding this node gives up: the function is stopped
// and then the lease deleted, so the next holder never overlaps it. A
// function that does not stop within half a TTL keeps the lease, which
// expires unrenewed.
func (c *campaign) release(reason string) {
	if !c.holding() {
		return
	}
	stopped := c.stopRun()
	if stopped {
		ctx, cancel := context.WithTimeout(context.Background(), c.d.renew)
		err := c.d.kv.Delete(ctx, c.key, jetstream.LastRevision(c.rev))
		cancel()
		if err != nil {
			c.d.log.Warn("duty_release_failed", "duty", c.job.Name, engine.LogErr, err.Error())
		}
	}
	c.d.log.Info("duty_handed_over", "duty", c.job.Name, "term", c.lease.Term, "reason", reason, "stopped", stopped)
	c.drop(false)
}

// stopRun cancels the duty's function and waits up to half a TTL for it
// to return; it reports whether it did.
func (c *campaign) stopRun() bool {
	if c.cancel == nil {
		return true
	}
	c.cancel()
	select {
	case <-c.runDone:
		return true
	case <-time.After(c.d.cfg.TTL / 2):
		return false
	}
}

func (c *campaign) drop(lost bool) {
	c.cancel, c.runDone = nil, nil
	c.mu.Lock()
	c.held = false
	if lost {
		c.lost++
	}
	c.mu.Unlock()
}
