package tracker

// A project's counter (last_number) is moved by every create into it.
// Read and written by a statement each a create, it was two of a drained
// create's dozen statements; so the creates of one apply transaction take
// their numbers from projectCounters, read once a project, and the
// project's row is written once, when the transaction ends or before a
// record that reads it (statelog.Held).

import (
	"context"
	"database/sql"
	"errors"
	"sort"

	"github.com/crewlet/crewlet/engine/statelog"
)

// projectCounters is what the creates of one transaction hold back, by
// project.
type projectCounters map[string]*projectCounter

type projectCounter struct {
	last int64 // the last number taken
	// version and scoped are the newest records that moved the project's
	// row as its own (a create written on the project's subject) and
	// without being about it (a create on its own item's subject).
	version, scoped uint64
}

func newProjectCounters() statelog.Held { return projectCounters{} }

// Flush writes every counter held and forgets them: a record after the
// flush reads the project's row again.
func (p projectCounters) Flush(ctx context.Context, tx *sql.Tx, at statelog.Applying) error {
	keys := make([]string, 0, len(p))
	for k := range p {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		c := p[k]
		if _, err := at.Exec(ctx, tx, `UPDATE tracker_projects SET last_number = ?, version = max(version, ?), scoped_through = max(scoped_through, ?) WHERE key = ?`,
			c.last, c.version, c.scoped, k); err != nil {
			return err
		}
	}
	clear(p)
	return nil
}

// counter is project's counter as the creates before this one left it,
// and whether item is filed already; nil where there is no such project.
func (a *apply) counter(project, item string) (c *projectCounter, filed bool, err error) {
	if c = a.counters[project]; c != nil {
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
	a.counters[project] = c
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
