package trackapply

// The row-by-row apply of a bulk record, for tests only (bulkByRow).

import (
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// bulkRowSelect reads the part of an item row a bulk record reads or
// writes: its project (to check), status, assignee and the columns every
// write moves. Reading whole rows (titles, descriptions, the fields'
// join) was a fifth of a bulk record's apply.
const bulkRowSelect = `SELECT id, project, status, assignee, reopens, handoffs, version, scoped_through, updated_at, doc FROM tracker_items WHERE id IN (`

// preload reads the items of a bulk record, many to a statement (in the
// chunks sqlite.ChunkLen gives, so the texts are few and prepared), as
// partial rows: a partial row is only ever written light (writeItem).
func (a *apply) preload(ids []string) error {
	for start := 0; start < len(ids); {
		n := sqlite.ChunkLen(len(ids)-start, MaxRowsPerStatement)
		args := make([]any, n)
		for i, id := range ids[start : start+n] {
			args[i] = id
		}
		start += n
		if err := a.preloadRows(bulkRowSelect+sqlite.Placeholders(n)+`)`, args...); err != nil {
			return err
		}
	}
	return nil
}

// preloadRows reads the partial rows query answers into the record's
// items.
func (a *apply) preloadRows(query string, args ...any) error {
	rows, err := a.at.Query(a.ctx, a.tx, query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		it := &itemRow{read: true, partial: true}
		if err := rows.Scan(&it.ID, &it.Project, &it.Status, &it.Assignee, &it.Reopens, &it.Handoffs, &it.Version, &it.Scoped, &it.Updated, &it.Doc); err != nil {
			return err
		}
		it.markRead()
		if _, ok := a.items[it.ID]; !ok {
			a.items[it.ID] = it
			a.order = append(a.order, it.ID)
		}
	}
	return rows.Err()
}

// bulkByRow is the row-by-row apply of a bulk record that every build
// before bulkBySet ran: each item read into Go (preload), its changes
// decided there, its history rows bound one by one. A node no longer runs
// it; it is the reference bulkBySet's rows are held equal to
// (TestBulkBySetWritesTheRowApplysRows, through RowBulk), and what an
// older node of the same fleet writes for the same record.
func (a *apply) bulkByRow(b *trackrec.BulkUpdate) error {
	a.ownProject = b.Project
	if err := a.preload(b.Items); err != nil {
		return err
	}
	var its []*itemRow
	for _, id := range b.Items {
		it, err := a.item(id)
		if err != nil {
			return err
		}
		if it != nil && it.Project == b.Project {
			its = append(its, it)
		}
	}
	for _, it := range its {
		a.setField(it, "status", &it.Status, b.Status)
		a.setField(it, "assignee", &it.Assignee, b.Assignee)
	}
	if err := a.addToSets(its, "tag", "tracker_tags", "tag", b.AddTags); err != nil {
		return err
	}
	return a.addToSets(its, "watcher", "tracker_watchers", "watcher", b.AddWatchers)
}

// addToSets adds every value to the set (tags or watchers) of every item,
// a history row for each the item did not hold. The set rows are inserted
// first, many to a statement, and the insert returns which were new,
// rather than reading the sets beforehand (reading them was a sixth of a
// bulk record's apply); the history rows then follow in the order the
// values are given, item by item.
func (a *apply) addToSets(its []*itemRow, field, table, col string, vals []string) error {
	if len(vals) == 0 || len(its) == 0 {
		return nil
	}
	buf := newRowBuffer(table, []string{"item", col}, "ON CONFLICT DO NOTHING RETURNING item, "+col)
	for _, it := range its {
		for _, v := range vals {
			buf.add(it.ID, v)
		}
	}
	added := map[[2]string]bool{}
	_, err := buf.each(a.ctx, a.tx, func(q string, args []any) error {
		rows, err := a.at.Query(a.ctx, a.tx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var k [2]string
			if err := rows.Scan(&k[0], &k[1]); err != nil {
				return err
			}
			added[k] = true
		}
		return rows.Err()
	})
	if err != nil {
		return err
	}
	a.at.Wrote(len(added))
	for _, it := range its {
		for _, v := range vals {
			if k := [2]string{it.ID, v}; added[k] {
				delete(added, k) // a value given twice is added once
				a.change(it, field, "", v)
			}
		}
	}
	return nil
}
