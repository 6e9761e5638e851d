package node

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// Builtin are the engine's own domains, which a node runs unless its
// Config names others (as engine tests open one). The binary's list is
// the registry's (package domains), which names its domains' tools too
// and begins with these; its test holds it to that.
func Builtin() []statelog.Spec {
	return []statelog.Spec{
		tracker.Spec,
		kb.Spec,
	}
}

// domain is one domain as this node runs it.
type domain struct {
	spec    statelog.Spec
	log     *broker.Log
	replica *statelog.Replica
	service rest.Router
}

// ensureStreams sizes the logs' ceilings together, creates every
// domain's stream where it is missing (an existing one is never
// rewritten) and opens its log.
func (n *Node) ensureStreams(ctx context.Context) error {
	cfg := n.cfg
	plan, in, err := n.sizeLogs(ctx)
	if err != nil {
		return err
	}
	for i, sp := range cfg.Domains {
		sized := plan.Logs[i]
		ss := broker.StreamSpec{Name: sp.Stream, Subjects: sp.Subjects(), MaxBytes: sized.Create, Fit: sized.Fit, Duplicates: cfg.Stream.DuplicateWindow,
			Replicas: cfg.Stream.Replicas, Wait: cfg.Stream.ClusterWait, Compacted: sp.Compacted, MaxAge: sp.MaxAge,
			AtomicBatches: n.broker.Server != nil}
		s, err := broker.EnsureStream(ctx, n.broker.JS, ss, cfg.Logger)
		if err != nil {
			return n.reserveRefused(ctx, err, in, sized.Log, sized.Create)
		}
		l := broker.NewLog(n.broker.JS, s, sp.Name(), cfg.Name, cfg.Logger)
		l.SetDrainWait(cfg.DrainWait)
		if cfg.SingleAppends {
			l.SetSingleAppends()
		}
		if cfg.BarrierReads {
			l.SetBarrierReads(true)
		}
		if cfg.MarkedZeroWrites {
			l.SetMarkedZeroWrites(true)
		}
		if n.broker.Server != nil {
			l.SetVolume(cfg.Stream.StoreDir)
			// A lone embedded broker's stream state is read in process
			// (a clustered one is asked through its API).
			l.SetLocalServer(n.broker.Server)
			if !cfg.GroupReaders {
				l.SetOwnReader()
			}
		}
		n.domains = append(n.domains, &domain{spec: sp, log: l})
	}
	n.reportShort(plan)
	return nil
}

// openReplicas opens every domain's replica on its log, in order, builds
// its service, and links the services (link.go).
func (n *Node) openReplicas(ctx context.Context) error {
	cfg := n.cfg
	streams := map[engine.Domain]string{}
	for _, d := range n.domains {
		streams[d.spec.Name()] = d.spec.Stream
	}
	for _, d := range n.domains {
		name := d.spec.Name()
		rc := statelog.Config{Node: cfg.Name, Generation: 1, DB: n.db, Log: d.log, Domain: d.spec.Domain,
			Clock: cfg.Clock, Logger: cfg.Logger, Publishing: cfg.Mode == ModeNormal, GateReserve: d.spec.GateReserve, Streams: streams, Compacted: d.spec.Compacted,
			RetryBudget: cfg.ApplyRetryBudget, WriteWait: cfg.WriteWait, ReadBudget: cfg.ReadBudget, PublishTimeout: cfg.PublishTimeout,
			Metrics: n.metrics.Domain(string(name)), DeferralGrace: cfg.DeferralGrace, BelowFloor: n.snaps.held,
			ProgressEvery: cfg.ProgressEvery, AckEvery: max(cfg.AckEvery, 0), ElectionBound: d.log.ElectionBound(),
			OwnWrite: n.ryw.Raise}
		if cfg.Hooks.WrapLog != nil {
			rc.Log = cfg.Hooks.WrapLog(name, rc.Log)
		}
		if h := cfg.Hooks.BeforeApplyCommit; h != nil {
			rc.BeforeCommit = func(_ *sql.Tx, last uint64) error { return h(name, last) }
		}
		r, err := statelog.Open(ctx, rc)
		if err != nil {
			return fmt.Errorf("node: open the %s domain: %w", name, err)
		}
		d.replica = r
		if d.spec.Service != nil {
			svc, ok := d.spec.Service(r, cfg.Clock).(rest.Router)
			if !ok {
				return fmt.Errorf("node: the %s domain's service declares no HTTP routes: a domain's service is a rest.Router (Routes, nil for none)", name)
			}
			d.service = svc
		}
	}
	return n.link()
}

func (n *Node) find(d engine.Domain) *domain {
	for _, x := range n.domains {
		if x.spec.Name() == d {
			return x
		}
	}
	return nil
}

// Services are the domains' services, in the node's domain order: what
// the surfaces are built over (each domain's registry entry builds its
// tools over its service), each declaring the domain's HTTP routes.
func (n *Node) Services() []rest.Router {
	var out []rest.Router
	for _, d := range n.domains {
		if d.service != nil {
			out = append(out, d.service)
		}
	}
	return out
}

// Tracker is the tracker's service, nil on a node that does not run it.
func (n *Node) Tracker() *tracker.Service {
	s, _ := n.Service(engine.DomainTracker).(*tracker.Service)
	return s
}

// Pages is the knowledge base's service, nil on a node that does not run it.
func (n *Node) Pages() *kb.Service {
	s, _ := n.Service(engine.DomainPages).(*kb.Service)
	return s
}

// Service is domain d's service, nil on a node that does not run it.
func (n *Node) Service(d engine.Domain) rest.Router {
	if x := n.find(d); x != nil {
		return x.service
	}
	return nil
}

// Replica returns a domain's replica, nil for a domain this node does not
// replicate.
func (n *Node) Replica(d engine.Domain) *statelog.Replica {
	if x := n.find(d); x != nil {
		return x.replica
	}
	return nil
}

// Log returns a domain's broker log (tests count records through it).
func (n *Node) Log(d engine.Domain) *broker.Log {
	if x := n.find(d); x != nil {
		return x.log
	}
	return nil
}

// replicas are the node's running domain replicas.
func (n *Node) replicas() []*statelog.Replica {
	var out []*statelog.Replica
	for _, d := range n.domains {
		if d.replica != nil {
			out = append(out, d.replica)
		}
	}
	return out
}
