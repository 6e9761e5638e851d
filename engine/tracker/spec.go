package tracker

import (
	"context"
	"database/sql"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Spec is the tracker as the node runs it: the mutation log, a log (not
// compacted) that keeps the gate reserve and decides whether the node
// serves the estate.
var Spec = statelog.Spec{
	Domain:      domain{},
	Stream:      engine.StreamTracker,
	CeilingKey:  "stream.tracker_log_max_bytes",
	Ask:         capacity.VolumeQuarter(4*capacity.GiB, 64*capacity.GiB),
	GateReserve: true,
	Estate:      true,
	Service:     func(r statelog.DomainReplica, clock engine.Clock) any { return NewService(r, clock) },
}

// domain is the apply side (trackapply.Domain: rows, gates, computed
// columns) with the answer a write of this node is given from inside the
// apply (statelog.Answerer): the item as the service reads it.
type domain struct{ trackapply.Domain }

var (
	_ statelog.GatedDomain   = domain{}
	_ statelog.DerivedDomain = domain{}
	_ statelog.Answerer      = domain{}
)

// Answer is the item a create or an update of this node answers with, as
// the rows stand right after its record.
func (domain) Answer(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) (any, error) {
	if rec.Kind != trackrec.KindCreateWorkItem && rec.Kind != trackrec.KindUpdateWorkItem {
		return nil, nil
	}
	id := trackrec.ItemOfSubject(rec.Subject)
	if id == "" {
		return nil, nil
	}
	return scanLoadedItem(at.QueryRow(ctx, tx, loadItemByIDQuery, id))
}
