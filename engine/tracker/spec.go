package tracker

import (
	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Spec is the tracker as the node runs it: the mutation log, a log (not
// compacted) that keeps the gate reserve and decides whether the node
// serves the estate.
var Spec = statelog.Spec{
	Domain:      Domain{},
	Stream:      engine.StreamTracker,
	CeilingKey:  "stream.tracker_log_max_bytes",
	Ask:         capacity.VolumeQuarter(4*capacity.GiB, 64*capacity.GiB),
	GateReserve: true,
	Estate:      true,
	Service:     func(r statelog.DomainReplica, clock engine.Clock) any { return NewService(r, clock) },
}
