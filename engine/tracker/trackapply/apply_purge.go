package trackapply

// The records whose apply reaches past their own item: a purge, which
// rewrites every item pointing at the purged one, and a bulk update.

import (
	"slices"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// purge destroys an item and everything that hangs off it, rewrites the
// items that point at it (their edges to it go, its children move up to
// its parent) and writes the marker the deletion gate reads.
func (a *apply) purge(p *trackrec.Purge) error {
	it, err := a.item(p.ID)
	if err != nil || it == nil {
		return err
	}
	if err := a.dropEdgesTo(it); err != nil {
		return err
	}
	if err := a.refileDependents(it); err != nil {
		return err
	}
	if err := a.forgetDue(it.ID); err != nil {
		return err
	}
	return a.destroy(it)
}

// pointing is one edge of another item to a purged one.
type pointing struct {
	item, kind string
	authored   bool
}

// dropEdgesTo takes down the edges of the items whose edges point at it
// (dependents, blockers, relations), each on the item that holds it, so
// that item's history says the edge went.
func (a *apply) dropEdgesTo(it *itemRow) error {
	ps, err := a.edgesPointingAt(it)
	if err != nil {
		return err
	}
	for _, x := range ps {
		o, err := a.item(x.item)
		if err != nil {
			return err
		}
		if o == nil {
			continue
		}
		if err := a.loadSets([]*itemRow{o}); err != nil {
			return err
		}
		if err := a.removeEdge(o, trackrec.EdgeRef{Kind: x.kind, Other: it.ID}, x.authored); err != nil {
			return err
		}
	}
	return nil
}

// edgesPointingAt reads every edge to it, whole, before any is taken
// down: taking one down deletes from the table the query reads.
func (a *apply) edgesPointingAt(it *itemRow) ([]pointing, error) {
	rows, err := a.at.Query(a.ctx, a.tx, `SELECT item, kind, authored FROM tracker_edges WHERE other = ? AND item != ? ORDER BY item, kind`, it.ID, it.ID)
	if err != nil {
		return nil, err
	}
	var ps []pointing
	for rows.Next() {
		var x pointing
		if err := rows.Scan(&x.item, &x.kind, &x.authored); err != nil {
			rows.Close()
			return nil, err
		}
		ps = append(ps, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return ps, nil
}

// refileDependents re-files its children under its parent; items merged
// into it keep their own rows and lose the pointer.
func (a *apply) refileDependents(it *itemRow) error {
	for _, q := range []struct{ sql, field string }{
		{`SELECT id FROM tracker_items WHERE parent = ? ORDER BY id`, "parent"},
		{`SELECT id FROM tracker_items WHERE merged_into = ? ORDER BY id`, "merged_into"},
	} {
		ids, err := sqlite.Strings(a.ctx, a.tx, q.sql, it.ID)
		if err != nil {
			return err
		}
		for _, id := range ids {
			o, err := a.item(id)
			if err != nil {
				return err
			}
			if q.field == "parent" {
				a.setField(o, "parent", &o.Parent, &it.Parent)
			} else {
				empty := ""
				a.setField(o, "merged_into", &o.MergedInto, &empty)
			}
		}
	}
	return nil
}

// destroy deletes the item's rows, its child rows and its search posting,
// writes the purge marker the deletion gate reads (a record about the item
// that arrives later is then dropped, not applied) and drops the item from
// the apply, so finish writes no row for it.
func (a *apply) destroy(it *itemRow) error {
	for _, del := range []string{
		`DELETE FROM tracker_tags WHERE item = ?`, `DELETE FROM tracker_watchers WHERE item = ?`,
		`DELETE FROM tracker_edges WHERE item = ?`, `DELETE FROM tracker_comments WHERE item = ?`,
		`DELETE FROM tracker_history WHERE item = ?`, `DELETE FROM tracker_comment_versions WHERE item = ?`, `DELETE FROM tracker_items WHERE id = ?`,
		`DELETE FROM tracker_item_fields WHERE id = ?`,
	} {
		if _, err := a.at.Exec(a.ctx, a.tx, del, it.ID); err != nil {
			return err
		}
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM tracker_search WHERE rowid = ?`, it.Doc); err != nil {
		return err
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_purged(id, key, seq) VALUES(?,?,?) ON CONFLICT DO NOTHING`, it.ID, it.Key, a.seq); err != nil {
		return err
	}
	a.projects[it.Project] = true
	delete(a.items, it.ID)
	a.order = slices.DeleteFunc(a.order, func(id string) bool { return id == it.ID })
	return nil
}

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

// bulk applies a bulk record. A node applies it by set (bulkBySet); what
// follows is the row-by-row apply every build before that ran, kept as
// the reference its rows are held equal to (rowBulk, a test's seam).
func (a *apply) bulk(b *trackrec.BulkUpdate) error {
	if !rowBulk {
		return a.bulkBySet(b)
	}
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
