package tracker

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"

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
	if rec.Kind == trackrec.KindCreateWorkItem {
		// The item the apply just filed, as it filed it: reading it back
		// was a twentieth of a create's CPU at 64 writers.
		// TestCreatedAnswerIsTheRowsItem holds the two equal.
		if c, ok := trackapply.CreatedBy(at); ok && c.ID == id {
			createdAnswers.Add(1)
			return createdItem(c), nil
		}
	}
	return scanLoadedItem(at.QueryRow(ctx, tx, loadItemByIDQuery, id))
}

// createdAnswers counts the creates answered from their apply, for
// tests (CreatedAnswers).
var createdAnswers atomic.Uint64

// createdItem is a created item as the rows would answer it (scanItem).
func createdItem(c trackapply.Created) WorkItem {
	return WorkItem{ID: c.ID, Key: c.Key, Project: c.Project, Number: c.Number, Title: c.Title, Description: c.Description,
		Status: c.Status, Assignee: c.Assignee, Priority: trackrec.PriorityName(c.Priority), Due: c.Due, Estimate: c.Estimate, Type: c.Type,
		Version: c.Version, CreatedAt: time.Unix(0, c.CreatedAt).UTC(), UpdatedAt: time.Unix(0, c.UpdatedAt).UTC(),
		Tags: orEmpty(c.Tags), Watchers: []string{}, Edges: []Edge{}, Reopens: c.Reopens, Handoffs: c.Handoffs, Trashed: c.Trashed, Mark: c.Mark}
}
