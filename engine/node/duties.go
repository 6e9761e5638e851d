package node

import (
	"context"
	"fmt"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/duty"
	"github.com/crewlet/crewlet/engine/metrics"
)

// openDuties opens the fleet's duties on this node (the leases' bucket),
// retrying while a cluster still settles as the units' bucket does. A
// node may hold a duty only while it serves (Unready: its copy in
// service, normal mode, room on its volume).
func (n *Node) openDuties(ctx context.Context) error {
	cfg := n.cfg
	wait := cfg.Stream.ClusterWait
	if wait == 0 {
		wait = 2 * time.Minute
	}
	deadline := time.Now().Add(wait)
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		d, err := duty.Open(actx, duty.Config{JS: n.broker.JS, Node: cfg.Name, Replicas: max(cfg.Stream.Replicas, 1), TTL: cfg.DutyTTL,
			Eligible: n.Unready, Clock: cfg.Clock, Logger: cfg.Logger})
		cancel()
		if err == nil {
			n.duties = d
			return nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) || cfg.Stream.Cluster.Listen == "" && cfg.Stream.Type != "nats" {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// startDuties campaigns for every duty the domains' services offer
// (duty.Provider), once the node is up.
func (n *Node) startDuties() error {
	for _, d := range n.domains {
		p, ok := d.service.(duty.Provider)
		if !ok {
			continue
		}
		for _, j := range p.Duties() {
			if err := n.duties.Start(j); err != nil {
				return err
			}
		}
	}
	return nil
}

// Duties are this node's duties: the leases it campaigns for and holds.
func (n *Node) Duties() *duty.Duties { return n.duties }

// dutyHolders reads who holds each duty, for the retention answer.
func (n *Node) dutyHolders(ctx context.Context) ([]duty.Holder, error) {
	if n.duties == nil {
		return nil, engine.Refuse(engine.CodeInternal, "this node runs no duties.")
	}
	return n.duties.Holders(ctx)
}

// dutyStates are this node's duties for its metrics: held here or not,
// and who the lease names (read once for all of them).
func (n *Node) dutyStates(ctx context.Context) []metrics.DutyState {
	if n.duties == nil {
		return nil
	}
	holder := map[string]string{}
	if hs, err := n.duties.Holders(ctx); err == nil {
		for _, h := range hs {
			holder[h.Duty] = h.Node
		}
	}
	var out []metrics.DutyState
	for _, s := range n.duties.Local() {
		out = append(out, metrics.DutyState{Duty: s.Duty, Held: s.Held, Holder: holder[s.Duty], Acquired: s.Acquired, Lost: s.Lost})
	}
	return out
}

// startServices starts every domain service with work of its own on
// this node (engine.Starter), once the node is up.
func (n *Node) startServices(ctx context.Context) error {
	h := engine.Host{Node: n.cfg.Name, DataDir: n.cfg.DataDir, Company: n.cfg.Company.Location(), Clock: n.cfg.Clock, Logger: n.cfg.Logger}
	for _, d := range n.domains {
		s, ok := d.service.(engine.Starter)
		if !ok {
			continue
		}
		if err := s.Start(ctx, h); err != nil {
			return fmt.Errorf("node: start the %s domain's service: %w", d.spec.Name(), err)
		}
		n.started = append(n.started, s)
	}
	return nil
}

// stopServices stops what startServices started, last first.
func (n *Node) stopServices() {
	for i := len(n.started) - 1; i >= 0; i-- {
		n.started[i].Stop()
	}
	n.started = nil
}

// openCoordination opens the coordination buckets: the units of work
// seats derive their ids from, and the duties' leases.
func (n *Node) openCoordination(ctx context.Context) error {
	var err error
	if n.units, err = openUnits(ctx, n.broker.JS, n.cfg); err != nil {
		return err
	}
	return n.openDuties(ctx)
}

// startWork starts the domains' own work once the node is up: their
// services' (Starter), then the duties they offer.
func (n *Node) startWork(ctx context.Context) error {
	if err := n.startServices(ctx); err != nil {
		return err
	}
	return n.startDuties()
}
