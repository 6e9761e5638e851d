package trackapply

// The creates of one apply transaction hold back the rows no create
// reads (statelog.Held), written at the transaction's end, or before any
// record other than a create, as multi-row statements: their projects'
// counters (last_number, read once a project and written once), their
// history rows, their items' keys, their search postings and who wrote
// them. Each of those was a statement a create, and a drained create ran
// a dozen; the item's own row is still written by its create, since a
// later create reads it (a parent, an edge, whether it is filed).

import (
	"context"
	"database/sql"
	"errors"
	"sort"

	"github.com/crewlet/crewlet/engine/statelog"
)

// heldRows is what the creates of one transaction hold back.
type heldRows struct {
	counters map[string]*projectCounter
	hist     *rowBuffer
	keys     *rowBuffer
	search   *rowBuffer
	by       *rowBuffer
	// created is the last create's item, for its write's answer
	// (created.go).
	created createdRow
}

type projectCounter struct {
	last int64 // the last number taken
	// version and scoped are the newest records that moved the project's
	// row as its own (a create written on the project's subject) and
	// without being about it (a create on its own item's subject).
	version, scoped uint64
}

func newHeldRows() statelog.Held {
	return &heldRows{counters: map[string]*projectCounter{}, hist: newHistBuffer(),
		keys:   newRowBuffer("tracker_item_keys", []string{"key", "id"}, "ON CONFLICT DO NOTHING"),
		search: newRowBuffer("tracker_search", []string{"rowid", "title", "description", "comments"}, ""),
		by:     newRowBuffer("tracker_record_by", []string{"seq", "by"}, "ON CONFLICT DO NOTHING")}
}

func newHistBuffer() *rowBuffer {
	return newRowBuffer("tracker_history", []string{"item", "seq", "n", "field", "old", "new", "handoffs", "at", "doc"}, "")
}

// Flush writes everything held and forgets it: a record after the flush
// reads the projects' rows again.
func (h *heldRows) Flush(ctx context.Context, tx *sql.Tx, at statelog.Applying) error {
	keys := make([]string, 0, len(h.counters))
	for k := range h.counters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := h.counters[k]
		if _, err := at.Exec(ctx, tx, `UPDATE tracker_projects SET last_number = ?, version = max(version, ?), scoped_through = max(scoped_through, ?) WHERE key = ?`,
			c.last, c.version, c.scoped, k); err != nil {
			return err
		}
	}
	clear(h.counters)
	for _, b := range []*rowBuffer{h.hist, h.keys, h.search, h.by} {
		if _, err := b.flush(ctx, tx, at.Exec); err != nil {
			return err
		}
	}
	return nil
}

// counter is project's counter as the creates before this one left it,
// and whether item is filed already; nil where there is no such project.
func (a *apply) counter(project, item string) (c *projectCounter, filed bool, err error) {
	if c = a.held.counters[project]; c != nil {
		err = a.at.QueryRow(a.ctx, a.tx, `SELECT EXISTS(SELECT 1 FROM tracker_items WHERE id = ?)`, item).Scan(&filed)
		return c, filed, err
	}
	// The project's counter and whether the item is filed already, in one
	// statement: the item is almost never there (a second copy of the
	// create is stopped by the ledger before this), and reading its whole
	// row to find that out cost a seventh of a create's apply.
	var last int64
	err = a.at.QueryRow(a.ctx, a.tx, `SELECT last_number, EXISTS(SELECT 1 FROM tracker_items WHERE id = ?) FROM tracker_projects WHERE key = ?`,
		item, project).Scan(&last, &filed)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	c = &projectCounter{last: last}
	a.held.counters[project] = c
	return c, filed, nil
}

// take takes the project's next number for the record at seq.
func (c *projectCounter) take(seq uint64, own bool) int64 {
	c.last++
	if own {
		c.version = seq
	} else {
		c.scoped = seq
	}
	return c.last
}
