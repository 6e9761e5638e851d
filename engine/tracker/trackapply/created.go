package trackapply

import (
	"maps"
	"slices"

	"github.com/crewlet/crewlet/engine/statelog"
)

// Created is an item as its create's apply filed it: what the write's
// answer would read back from the rows right after the record, known
// without reading them. Only an item whose answer needs no other row is
// one: with no parent, no edges and not merged (an answer names those by
// the other items' keys).
type Created struct {
	ID, Key, Project                     string
	Number                               int64
	Title, Description, Status, Assignee string
	Priority                             int64 // the rank in trackrec.Priorities
	Due, Type                            string
	Estimate                             float64
	Version                              uint64 // max(version, scoped_through)
	CreatedAt, UpdatedAt                 int64  // Unix nanoseconds
	Reopens, Handoffs                    int64
	Trashed                              bool
	Mark                                 string
	Tags                                 []string // sorted, as the rows give them
}

// CreatedBy is the item the create at at.Seq filed, where the applier
// holds the transaction (at.Hold) and the item is one Created can hold;
// ok false otherwise, and the answer is read from the rows.
func CreatedBy(at statelog.Applying) (c Created, ok bool) {
	h, batched := at.Hold(newHeldRows)
	held := h.(*heldRows)
	if !batched || held.created.it == nil || held.created.seq != at.Seq {
		return Created{}, false
	}
	it := held.created.it
	tags := slices.Sorted(maps.Keys(it.tags))
	return Created{ID: it.ID, Key: it.Key, Project: it.Project, Number: it.Number,
		Title: it.Title, Description: it.Description, Status: it.Status, Assignee: it.Assignee,
		Priority: it.Priority, Due: it.Due, Type: it.Type, Estimate: it.Estimate, Version: max(it.Version, it.Scoped),
		CreatedAt: it.Created, UpdatedAt: it.Updated, Reopens: it.Reopens, Handoffs: it.Handoffs, Trashed: it.Trashed != 0, Mark: it.Mark, Tags: tags}, true
}

// createdRow is the item the last create filed, as its apply left it
// (nothing changes an apply's rows after its record), and the record's
// sequence; Created is made of it only for a write that awaits it.
type createdRow struct {
	seq uint64
	it  *itemRow
}

// noteCreated keeps the item the create record filed (a.own), after
// finish has written it, for CreatedBy; an item Created cannot hold, or
// a moot create, leaves none.
func (a *apply) noteCreated() {
	a.held.created = createdRow{}
	it := a.items[a.own]
	if it == nil || !it.created || it.Parent != "" || len(it.edges) > 0 || it.MergedInto != "" {
		return
	}
	a.held.created = createdRow{seq: a.seq, it: it}
}
