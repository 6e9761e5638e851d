package trackapply

// The item row an apply holds while it changes an item, and the changes
// of its fields and sets (tags, watchers, edges), each of which writes a
// history row.

import (
	"database/sql"
	"errors"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// itemRow is one work item as an apply holds it while changing it.
type itemRow struct {
	ID, Key, Project                     string
	Number                               int64
	Title, Description, Status, Assignee string
	Parent                               string
	Reopens, Handoffs, Trashed           int64
	TrashRoot, Mark, MergedInto          string
	Doc                                  int64
	Version, Scoped                      uint64
	Created, Updated                     int64
	Priority                             int64 // the rank in trackrec.Priorities
	Due, Type                            string
	Estimate                             float64
	touched, reindex, created, fields    bool
	read                                 bool      // read from its row, which base then holds
	partial                              bool      // read in part (the row bulk apply's preload, a test's): written light only
	base                                 itemShape // the row as read (apply_write.go)
	baseCounts                           counts    // its counts as read
	n                                    int       // history rows this record wrote on the item
	tags, watchers                       map[string]bool
	edges                                map[trackrec.EdgeRef]bool // authored or not
}

const itemRowColumns = `id, key, project, number, title, description, status, assignee, parent, reopens, handoffs, trashed, trash_root, mark, merged_into, doc, version, scoped_through, created_at, updated_at`

// itemRowSelect reads an item row with its fields (fields.go).
const itemRowSelect = `SELECT i.id, i.key, i.project, i.number, i.title, i.description, i.status, i.assignee, i.parent, i.reopens, i.handoffs,
	i.trashed, i.trash_root, i.mark, i.merged_into, i.doc, i.version, i.scoped_through, i.created_at, i.updated_at, ` + FieldColumns +
	` FROM tracker_items i` + FieldsJoin

func scanItemRow(sc interface{ Scan(...any) error }) (*itemRow, error) {
	it := &itemRow{}
	err := sc.Scan(&it.ID, &it.Key, &it.Project, &it.Number, &it.Title, &it.Description, &it.Status, &it.Assignee, &it.Parent,
		&it.Reopens, &it.Handoffs, &it.Trashed, &it.TrashRoot, &it.Mark, &it.MergedInto, &it.Doc, &it.Version, &it.Scoped, &it.Created, &it.Updated,
		&it.Priority, &it.Due, &it.Estimate, &it.Type)
	if err == nil {
		it.markRead()
	}
	return it, err
}

// item loads an item once per record; nil when it does not exist.
func (a *apply) item(id string) (*itemRow, error) {
	if it, ok := a.items[id]; ok {
		return it, nil
	}
	it, err := scanItemRow(a.at.QueryRow(a.ctx, a.tx, itemRowSelect+` WHERE i.id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	a.items[id] = it
	a.order = append(a.order, id)
	return it, nil
}

// loadSets reads the tags, watchers and edges of the given items, in
// chunks, so changes to them write history only where something changed.
func (a *apply) loadSets(items []*itemRow) error {
	per := BindLimit(a.ctx, a.tx) / 2
	for start := 0; start < len(items); start += per {
		chunk := items[start:min(start+per, len(items))]
		byID := make(map[string]*itemRow, len(chunk))
		args := make([]any, len(chunk))
		for i, it := range chunk {
			if it.tags == nil {
				it.tags, it.watchers, it.edges = map[string]bool{}, map[string]bool{}, map[trackrec.EdgeRef]bool{}
			}
			byID[it.ID], args[i] = it, it.ID
		}
		if err := a.loadSetsOf(byID, args); err != nil {
			return err
		}
	}
	return nil
}

// setsQuery reads the tags, watchers and edges of n items in one
// statement (where three statements cost three steps on every update's
// apply), each row led by the set it belongs to; the n ids are bound
// once, as ?1…?n, and named by all three parts.
func setsQuery(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		if i > 1 {
			b.WriteByte(',')
		}
		b.WriteString("?" + strconv.Itoa(i))
	}
	in := b.String()
	return `SELECT 0, item, tag, '', 0 FROM tracker_tags WHERE item IN (` + in + `)
		UNION ALL SELECT 1, item, watcher, '', 0 FROM tracker_watchers WHERE item IN (` + in + `)
		UNION ALL SELECT 2, item, kind, other, authored FROM tracker_edges WHERE item IN (` + in + `)`
}

// setsOfOne is setsQuery(1), built once: an update's apply reads one
// item's sets.
var setsOfOne = setsQuery(1)

// loadSetsOf fills the sets of the items byID holds, whose ids are args.
func (a *apply) loadSetsOf(byID map[string]*itemRow, args []any) error {
	q := setsOfOne
	if len(args) > 1 {
		q = setsQuery(len(args))
	}
	rows, err := a.query(len(args), q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var set, au int
		var id, v, w string
		if err := rows.Scan(&set, &id, &v, &w, &au); err != nil {
			return err
		}
		it := byID[id]
		switch set {
		case 0:
			it.tags[v] = true
		case 1:
			it.watchers[v] = true
		default:
			it.edges[trackrec.EdgeRef{Kind: v, Other: w}] = au == 1
		}
	}
	return rows.Err()
}

// change records one change of one field on an item: a history row, and
// the computed columns the change moves (a reopen, a hand-off).
func (a *apply) change(it *itemRow, field, old, new string) {
	switch field {
	case "status":
		if trackrec.Closed(old) && !trackrec.Closed(new) {
			it.Reopens++
		}
		if old == trackrec.StatusInProgress || new == trackrec.StatusInProgress {
			a.projects[it.Project] = true
		}
	case "assignee":
		// A hand-off is any change of who holds the item.
		it.Handoffs++
	}
	it.touched = true
	it.Updated = a.ts
	a.hist.add(it.ID, a.seq, it.n, field, old, new, it.Handoffs, a.ts, it.Doc)
	it.n++
}

func (a *apply) setField(it *itemRow, field string, dst *string, v *string) {
	if v == nil || *v == *dst {
		return
	}
	old := *dst
	*dst = *v
	a.change(it, field, old, *v)
	if field == "title" || field == "description" {
		it.reindex = true
	}
}

func (a *apply) addTag(it *itemRow, tag string) {
	if it.tags[tag] {
		return
	}
	it.tags[tag] = true
	a.tags.add(it.ID, tag)
	a.change(it, "tag", "", tag)
}

func (a *apply) addWatcher(it *itemRow, w string) {
	if it.watchers[w] {
		return
	}
	it.watchers[w] = true
	a.watchers.add(it.ID, w)
	a.change(it, "watcher", "", w)
}

func (a *apply) addEdge(it *itemRow, e trackrec.EdgeRef, authored bool) {
	if _, ok := it.edges[e]; ok {
		return
	}
	it.edges[e] = authored
	au := 0
	if authored {
		au = 1
	}
	a.edges.add(it.ID, e.Kind, e.Other, au)
	a.change(it, "edge", "", e.Kind+" "+e.Other)
}

func (a *apply) removeEdge(it *itemRow, e trackrec.EdgeRef, authored bool) error {
	au, ok := it.edges[e]
	if !ok || au != authored {
		return nil // never take down an authored edge with a mirror's removal, nor the reverse
	}
	delete(it.edges, e)
	if _, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM tracker_edges WHERE item = ? AND kind = ? AND other = ?`, it.ID, e.Kind, e.Other); err != nil {
		return err
	}
	a.change(it, "edge", e.Kind+" "+e.Other, "")
	return nil
}

func (a *apply) removeSet(it *itemRow, field, table, col string, have map[string]bool, vals []string) error {
	for _, v := range vals {
		if !have[v] {
			continue
		}
		delete(have, v)
		if _, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM `+table+` WHERE item = ? AND `+col+` = ?`, it.ID, v); err != nil {
			return err
		}
		a.change(it, field, v, "")
	}
	return nil
}

// query runs a query whose text lists n placeholders: through a statement
// prepared once per connection where n is one (the text every ordinary
// record uses), unprepared otherwise, so the cache does not keep a
// statement for every length a bulk record happens to have.
func (a *apply) query(n int, q string, args ...any) (*sql.Rows, error) {
	if n == 1 {
		return a.at.Query(a.ctx, a.tx, q, args...)
	}
	return a.tx.QueryContext(a.ctx, q, args...)
}
