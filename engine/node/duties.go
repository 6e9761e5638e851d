package node

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine/fleet"
)

// Duties runs a named duty's work while this node holds the duty: what
// the fleet's duty lease (engine/duty) provides. Hold runs work each
// time this node takes the duty, cancels work's context when it loses
// it, and returns once ctx ends and work has returned.
type Duties interface {
	Hold(ctx context.Context, name string, work func(context.Context) error)
}

// dutyHolder is a service holding the work of a duty (the vectors
// domain's embedding duty).
type dutyHolder interface {
	Duty() (name string, work func(context.Context) error)
}

// startDuties runs every duty a domain's service holds, under
// Config.Duties or, where none is given, the interim rule. A node that
// does not publish (maintenance, seal) holds none.
func (n *Node) startDuties() {
	ctx, cancel := context.WithCancel(context.Background())
	n.duties = dutiesRun{cancel: cancel}
	if n.cfg.Mode != ModeNormal {
		return
	}
	d := n.cfg.Duties
	if d == nil {
		d = interimDuties{n: n}
	}
	for _, dom := range n.domains {
		h, ok := dom.service.(dutyHolder)
		if !ok {
			continue
		}
		name, work := h.Duty()
		n.duties.wg.Add(1)
		go func() {
			defer n.duties.wg.Done()
			d.Hold(ctx, name, work)
		}()
	}
}

// dutiesRun is the node's running duties.
type dutiesRun struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// stopDuties ends every duty's work and waits for it.
func (n *Node) stopDuties() {
	if n.duties.cancel != nil {
		n.duties.cancel()
		n.duties.wg.Wait()
	}
}

// interimDuties is the rule a node follows until the fleet's duty lease
// (engine/duty) is wired in through Config.Duties: the duty is this
// node's while its name is the least among the data nodes whose
// heartbeat the positions register shows within three intervals (itself
// always counted). It is not a lease: while the nodes' views of the
// register differ (one joining, one just stopped) two may hold it at
// once for a beat or two, which the vectors domain tolerates (its
// records are arbitrated per subject and each one is the source's whole
// value), and a node that stops holding it is noticed only at the next
// beats.
type interimDuties struct{ n *Node }

func (d interimDuties) Hold(ctx context.Context, name string, work func(context.Context) error) {
	every := d.n.cfg.HeartbeatInterval
	if every == 0 {
		every = fleet.DefaultInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	var run *dutyWork
	defer func() { run.end() }()
	for {
		held := d.holder(every)
		switch {
		case held && run == nil:
			d.n.log.Info("duty_taken", "duty", name, "rule", "interim")
			run = startWork(ctx, work)
		case !held && run != nil:
			d.n.log.Info("duty_released", "duty", name, "rule", "interim")
			run.end()
			run = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// dutyWork is a duty's work running.
type dutyWork struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startWork(ctx context.Context, work func(context.Context) error) *dutyWork {
	wctx, cancel := context.WithCancel(ctx)
	w := &dutyWork{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		_ = work(wctx)
	}()
	return w
}

// end cancels the work and waits for it; a nil one is none.
func (w *dutyWork) end() {
	if w != nil {
		w.cancel()
		<-w.done
	}
}

// holder says whether this node's name is the least of the live ones.
func (d interimDuties) holder(every time.Duration) bool {
	known, _ := d.n.beat.Known()
	now := d.n.cfg.Clock.Now()
	names := []string{d.n.cfg.Name}
	for _, p := range known {
		if now.Sub(p.BeatAt) <= 3*every && !slices.Contains(names, p.Node) {
			names = append(names, p.Node)
		}
	}
	return slices.Min(names) == d.n.cfg.Name
}
