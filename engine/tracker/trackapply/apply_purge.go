package trackapply

// The record whose apply reaches past its own item: a purge, which
// rewrites every item pointing at the purged one. A bulk update's apply
// is bulk_set.go's.

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
		`DELETE FROM tracker_comment_versions WHERE item = ?`, `DELETE FROM tracker_items WHERE id = ?`,
		`DELETE FROM tracker_item_fields WHERE id = ?`,
	} {
		if _, err := a.at.Exec(a.ctx, a.tx, del, it.ID); err != nil {
			return err
		}
	}
	for _, del := range []string{`DELETE FROM tracker_history WHERE doc = ?`, `DELETE FROM tracker_search WHERE rowid = ?`} {
		if _, err := a.at.Exec(a.ctx, a.tx, del, it.Doc); err != nil {
			return err
		}
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_purged(id, key, seq) VALUES(?,?,?) ON CONFLICT DO NOTHING`, it.ID, it.Key, a.seq); err != nil {
		return err
	}
	a.projects[it.Project] = true
	delete(a.items, it.ID)
	a.order = slices.DeleteFunc(a.order, func(id string) bool { return id == it.ID })
	return nil
}
