package kb

import (
	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/kb/kbapply"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Spec is the knowledge base as the node runs it: the pages log, a log
// (not compacted) that keeps the gate reserve and decides whether the
// node serves the estate.
var Spec = statelog.Spec{
	Domain:      kbapply.Domain{},
	Stream:      engine.StreamPages,
	CeilingKey:  "stream.pages_log_max_bytes",
	Ask:         capacity.QuarterOf(engine.StreamTracker),
	GateReserve: true,
	Estate:      true,
	Service:     func(r statelog.DomainReplica, clock engine.Clock) any { return NewService(r, clock) },
}
