package tracker

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Domain is the tracker as the replication framework drives it.
type Domain struct{}

var (
	_ statelog.Domain        = Domain{}
	_ statelog.GatedDomain   = Domain{}
	_ statelog.DerivedDomain = Domain{}
)

// Name is "tracker".
func (Domain) Name() engine.Domain { return engine.DomainTracker }

// Schema is the tracker's tables.
func (Domain) Schema() string { return schema }

// RulesVersion is the version of the rules computing the computed columns.
func (Domain) RulesVersion() int { return RulesVersion }

// Apply writes one record's rows. Records were decided against the rows
// their subject's anchor named, so applying is deterministic; one that is
// moot here (its object gone, its project gone) writes nothing.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	a := &apply{ctx: ctx, tx: tx, at: at, seq: at.Seq, ts: at.Time.UnixNano(), items: map[string]*itemRow{},
		own: itemOfSubject(rec.Subject), projects: map[string]bool{}}
	a.hist = newRowBuffer("tracker_history", []string{"item", "seq", "n", "field", "old", "new", "handoffs", "at"}, "")
	a.tags = newRowBuffer("tracker_tags", []string{"item", "tag"}, "ON CONFLICT DO NOTHING")
	a.watchers = newRowBuffer("tracker_watchers", []string{"item", "watcher"}, "ON CONFLICT DO NOTHING")
	a.edges = newRowBuffer("tracker_edges", []string{"item", "kind", "other", "authored"}, "ON CONFLICT DO NOTHING")
	var err error
	switch rec.Kind {
	case KindCreateProject:
		var p createProject
		if json.Unmarshal(rec.Payload, &p) != nil {
			return nil // undecodable payload of a known kind: moot
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO tracker_projects(key, name, last_number, version, created_at) VALUES(?,?,0,?,?)
			ON CONFLICT(key) DO NOTHING`, p.Key, p.Name, at.Seq, a.ts)
		return err
	case KindCreateWorkItem:
		err = decodeThen(rec, a.createItem)
	case KindUpdateWorkItem:
		err = decodeThen(rec, a.updateItem)
	case KindMirrorEdges:
		err = decodeThen(rec, a.mirror)
	case KindComment:
		err = decodeThen(rec, a.comment)
	case KindMark:
		err = decodeThen(rec, a.mark)
	case KindMove:
		err = decodeThen(rec, a.move)
	case KindMergeDuplicate:
		err = decodeThen(rec, a.merge)
	case KindTrash:
		err = decodeThen(rec, a.trash)
	case KindRestore:
		err = decodeThen(rec, a.restore)
	case KindPurge:
		err = decodeThen(rec, a.purge)
	case KindBulkUpdate:
		err = decodeThen(rec, a.bulk)
	default:
		// A kind this build does not know is at a format version it claims
		// to read: apply nothing rather than guess.
		return nil
	}
	if err != nil {
		return err
	}
	return a.finish()
}

func decodeThen[T any](rec *record.Record, f func(*T) error) error {
	var p T
	if err := json.Unmarshal(rec.Payload, &p); err != nil {
		return nil // moot: a payload of a known kind this build cannot read
	}
	return f(&p)
}

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
	touched, reindex, created            bool
	n                                    int // history rows this record wrote on the item
	tags, watchers                       map[string]bool
	edges                                map[edgeRef]bool // authored or not
}

// apply is one record's application.
type apply struct {
	ctx      context.Context
	tx       *sql.Tx
	at       statelog.Applying
	seq      uint64
	ts       int64
	own      string // the item the record is about, "" for a project's
	items    map[string]*itemRow
	order    []string
	projects map[string]bool // projects whose active count may have moved
	// ownProject is the project the record is about, if it is one's.
	ownProject string
	hist       *rowBuffer
	tags       *rowBuffer
	watchers   *rowBuffer
	edges      *rowBuffer
}

const itemRowColumns = `id, key, project, number, title, description, status, assignee, parent, reopens, handoffs, trashed, trash_root, mark, merged_into, doc, version, scoped_through, created_at, updated_at`

func scanItemRow(sc interface{ Scan(...any) error }) (*itemRow, error) {
	it := &itemRow{}
	err := sc.Scan(&it.ID, &it.Key, &it.Project, &it.Number, &it.Title, &it.Description, &it.Status, &it.Assignee, &it.Parent,
		&it.Reopens, &it.Handoffs, &it.Trashed, &it.TrashRoot, &it.Mark, &it.MergedInto, &it.Doc, &it.Version, &it.Scoped, &it.Created, &it.Updated)
	return it, err
}

// item loads an item once per record; nil when it does not exist.
func (a *apply) item(id string) (*itemRow, error) {
	if it, ok := a.items[id]; ok {
		return it, nil
	}
	it, err := scanItemRow(a.at.QueryRow(a.ctx, a.tx, `SELECT `+itemRowColumns+` FROM tracker_items WHERE id = ?`, id))
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
				it.tags, it.watchers, it.edges = map[string]bool{}, map[string]bool{}, map[edgeRef]bool{}
			}
			byID[it.ID], args[i] = it, it.ID
		}
		in := placeholders(len(chunk))
		for _, q := range []struct {
			sql string
			put func(it *itemRow, a, b string, c int)
		}{
			{`SELECT item, tag, '', 0 FROM tracker_tags WHERE item IN (` + in + `)`, func(it *itemRow, v, _ string, _ int) { it.tags[v] = true }},
			{`SELECT item, watcher, '', 0 FROM tracker_watchers WHERE item IN (` + in + `)`, func(it *itemRow, v, _ string, _ int) { it.watchers[v] = true }},
			{`SELECT item, kind, other, authored FROM tracker_edges WHERE item IN (` + in + `)`, func(it *itemRow, k, o string, au int) {
				it.edges[edgeRef{Kind: k, Other: o}] = au == 1
			}},
		} {
			rows, err := a.query(len(chunk), q.sql, args...)
			if err != nil {
				return err
			}
			for rows.Next() {
				var id, v, w string
				var au int
				if err := rows.Scan(&id, &v, &w, &au); err != nil {
					rows.Close()
					return err
				}
				q.put(byID[id], v, w, au)
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

func closed(status string) bool { return status == StatusDone || status == StatusCancelled }

// change records one change of one field on an item: a history row, and
// the computed columns the change moves (a reopen, a hand-off).
func (a *apply) change(it *itemRow, field, old, new string) {
	switch field {
	case "status":
		if closed(old) && !closed(new) {
			it.Reopens++
		}
		if old == StatusInProgress || new == StatusInProgress {
			a.projects[it.Project] = true
		}
	case "assignee":
		// A hand-off is any change of who holds the item.
		it.Handoffs++
	}
	it.touched = true
	it.Updated = a.ts
	a.hist.add(it.ID, a.seq, it.n, field, old, new, it.Handoffs, a.ts)
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

func (a *apply) addEdge(it *itemRow, e edgeRef, authored bool) {
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

func (a *apply) removeEdge(it *itemRow, e edgeRef, authored bool) error {
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

func (a *apply) createItem(c *createWorkItem) error {
	var last int64
	err := a.at.QueryRow(a.ctx, a.tx, `SELECT last_number FROM tracker_projects WHERE key = ?`, c.Project).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	// A create record is about its new item; one written before creates
	// took their own subject is about the project, whose version it moves.
	col := "scoped_through"
	if a.own == "" {
		a.ownProject = c.Project
		col = "version"
	}
	if existing, err := a.item(c.ID); err != nil || existing != nil {
		return err // filed already: moot
	}
	// The number is the project's next, taken here in log order, so
	// concurrent creates and moves into the project never collide.
	number := last + 1
	if _, err := a.at.Exec(a.ctx, a.tx, `UPDATE tracker_projects SET last_number = ?, `+col+` = ? WHERE key = ?`, number, a.seq, c.Project); err != nil {
		return err
	}
	if c.Parent != "" {
		if p, err := a.item(c.Parent); err != nil {
			return err
		} else if p == nil {
			c.Parent = "" // the parent is gone: file the item at the top
		}
	}
	it := &itemRow{ID: c.ID, Key: fmt.Sprintf("%s-%d", c.Project, number), Project: c.Project, Number: number,
		Status: c.Status, Doc: int64(a.seq), Created: a.ts, Updated: a.ts, created: true, reindex: true,
		tags: map[string]bool{}, watchers: map[string]bool{}, edges: map[edgeRef]bool{}}
	a.items[c.ID] = it
	a.order = append(a.order, c.ID)
	a.own = c.ID
	a.change(it, "created", "", it.Key)
	it.Title, it.Description = c.Title, c.Description
	a.setField(it, "assignee", &it.Assignee, &c.Assignee)
	a.setField(it, "parent", &it.Parent, &c.Parent)
	if c.Status == StatusInProgress {
		a.projects[c.Project] = true
	}
	for _, t := range c.Tags {
		a.addTag(it, t)
	}
	for _, e := range c.Edges {
		if other, err := a.item(e.Other); err != nil {
			return err
		} else if other != nil {
			a.addEdge(it, e, true)
		}
	}
	return nil
}

func (a *apply) updateItem(u *updateWorkItem) error {
	it, err := a.item(u.ID)
	if err != nil || it == nil {
		return err
	}
	if err := a.loadSets([]*itemRow{it}); err != nil {
		return err
	}
	a.setField(it, "title", &it.Title, u.Title)
	a.setField(it, "description", &it.Description, u.Description)
	a.setField(it, "status", &it.Status, u.Status)
	a.setField(it, "assignee", &it.Assignee, u.Assignee)
	if u.Parent != nil && *u.Parent != "" {
		if p, err := a.item(*u.Parent); err != nil {
			return err
		} else if p == nil {
			u.Parent = nil // the new parent is gone: leave the item where it is
		}
	}
	a.setField(it, "parent", &it.Parent, u.Parent)
	for _, t := range u.AddTags {
		a.addTag(it, t)
	}
	if err := a.removeSet(it, "tag", "tracker_tags", "tag", it.tags, u.RemoveTags); err != nil {
		return err
	}
	for _, w := range u.AddWatchers {
		a.addWatcher(it, w)
	}
	if err := a.removeSet(it, "watcher", "tracker_watchers", "watcher", it.watchers, u.RemoveWatchers); err != nil {
		return err
	}
	for _, e := range u.AddEdges {
		if other, err := a.item(e.Other); err != nil {
			return err
		} else if other != nil {
			a.addEdge(it, e, true)
		}
	}
	for _, e := range u.RemoveEdges {
		if err := a.removeEdge(it, e, true); err != nil {
			return err
		}
	}
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

func (a *apply) mirror(m *mirrorEdges) error {
	it, err := a.item(m.ID)
	if err != nil || it == nil {
		return err
	}
	if err := a.loadSets([]*itemRow{it}); err != nil {
		return err
	}
	for _, e := range m.Add {
		if other, err := a.item(e.Other); err != nil {
			return err
		} else if other != nil {
			a.addEdge(it, e, false)
		}
	}
	for _, e := range m.Remove {
		if err := a.removeEdge(it, e, false); err != nil {
			return err
		}
	}
	return nil
}

func (a *apply) comment(c *comment) error {
	it, err := a.item(c.ID)
	if err != nil || it == nil {
		return err
	}
	if _, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_comments(item, seq, author, body, at) VALUES(?,?,?,?,?) ON CONFLICT DO NOTHING`,
		it.ID, a.seq, c.Author, c.Body, a.ts); err != nil {
		return err
	}
	a.change(it, "comment", "", c.Author)
	it.reindex = true
	return nil
}

func (a *apply) mark(m *mark) error {
	it, err := a.item(m.ID)
	if err != nil || it == nil {
		return err
	}
	a.setField(it, "mark", &it.Mark, &m.Mark)
	it.touched = true // a mark written twice still moves the version
	return nil
}

func (a *apply) move(m *move) error {
	it, err := a.item(m.ID)
	if err != nil || it == nil || it.Project == m.To {
		return err
	}
	var last int64
	err = a.at.QueryRow(a.ctx, a.tx, `SELECT last_number FROM tracker_projects WHERE key = ?`, m.To).Scan(&last)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // the target project is gone: moot
	}
	if err != nil {
		return err
	}
	number := last + 1
	// The target project's row changes without the record being about it.
	if _, err := a.at.Exec(a.ctx, a.tx, `UPDATE tracker_projects SET last_number = ?, scoped_through = ? WHERE key = ?`, number, a.seq, m.To); err != nil {
		return err
	}
	newKey := fmt.Sprintf("%s-%d", m.To, number)
	a.projects[it.Project], a.projects[m.To] = true, true
	a.change(it, "project", it.Project, m.To)
	a.change(it, "key", it.Key, newKey)
	it.Project, it.Number, it.Key = m.To, number, newKey
	_, err = a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_item_keys(key, id) VALUES(?, ?) ON CONFLICT DO NOTHING`, newKey, it.ID)
	return err
}

func (a *apply) merge(m *mergeDuplicate) error {
	dup, err := a.item(m.ID)
	if err != nil || dup == nil {
		return err
	}
	into, err := a.item(m.Into)
	if err != nil || into == nil || m.ID == m.Into {
		return err
	}
	if err := a.loadSets([]*itemRow{dup, into}); err != nil {
		return err
	}
	a.setField(dup, "merged_into", &dup.MergedInto, &m.Into)
	if !closed(dup.Status) {
		cancelled := StatusCancelled
		a.setField(dup, "status", &dup.Status, &cancelled)
	}
	a.addEdge(dup, edgeRef{Kind: EdgeDuplicates, Other: into.ID}, true)
	// The item merged into is rewritten without the record being about it:
	// its mirror and the duplicate's watchers carry scoped_through.
	a.addEdge(into, edgeRef{Kind: EdgeDuplicatedBy, Other: dup.ID}, false)
	ws := make([]string, 0, len(dup.watchers))
	for w := range dup.watchers {
		ws = append(ws, w)
	}
	sort.Strings(ws)
	for _, w := range ws {
		a.addWatcher(into, w)
	}
	return nil
}

func (a *apply) trash(t *trash) error {
	it, err := a.item(t.ID)
	if err != nil || it == nil || it.Trashed != 0 {
		return err
	}
	it.Trashed, it.TrashRoot = int64(a.seq), t.Root
	a.change(it, "trashed", "", t.Root)
	a.projects[it.Project] = true
	return nil
}

func (a *apply) restore(r *restore) error {
	it, err := a.item(r.ID)
	if err != nil || it == nil || it.Trashed == 0 {
		return err
	}
	a.change(it, "restored", it.TrashRoot, "")
	it.Trashed, it.TrashRoot = 0, ""
	a.projects[it.Project] = true
	return nil
}

// purge destroys an item and everything that hangs off it, rewrites the
// items that point at it (their edges to it go, its children move up to
// its parent) and writes the marker the deletion gate reads.
func (a *apply) purge(p *purge) error {
	it, err := a.item(p.ID)
	if err != nil || it == nil {
		return err
	}
	// Items whose edges point at it: dependents, blockers, relations.
	rows, err := a.at.Query(a.ctx, a.tx, `SELECT item, kind, authored FROM tracker_edges WHERE other = ? AND item != ? ORDER BY item, kind`, it.ID, it.ID)
	if err != nil {
		return err
	}
	type pointing struct {
		item, kind string
		authored   bool
	}
	var ps []pointing
	for rows.Next() {
		var x pointing
		if err := rows.Scan(&x.item, &x.kind, &x.authored); err != nil {
			rows.Close()
			return err
		}
		ps = append(ps, x)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
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
		if err := a.removeEdge(o, edgeRef{Kind: x.kind, Other: it.ID}, x.authored); err != nil {
			return err
		}
	}
	// Its children are re-filed under its parent; items merged into it
	// keep their own rows and lose the pointer.
	for _, q := range []struct{ sql, field string }{
		{`SELECT id FROM tracker_items WHERE parent = ? ORDER BY id`, "parent"},
		{`SELECT id FROM tracker_items WHERE merged_into = ? ORDER BY id`, "merged_into"},
	} {
		ids, err := queryStrings(a.ctx, a.tx, q.sql, it.ID)
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
	for _, del := range []string{
		`DELETE FROM tracker_tags WHERE item = ?`, `DELETE FROM tracker_watchers WHERE item = ?`,
		`DELETE FROM tracker_edges WHERE item = ?`, `DELETE FROM tracker_comments WHERE item = ?`,
		`DELETE FROM tracker_history WHERE item = ?`, `DELETE FROM tracker_items WHERE id = ?`,
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

// preload reads many items in chunked IN queries rather than one
// statement each.
func (a *apply) preload(ids []string) error {
	per := BindLimit(a.ctx, a.tx)
	for start := 0; start < len(ids); start += per {
		chunk := ids[start:min(start+per, len(ids))]
		args := make([]any, len(chunk))
		for i, id := range chunk {
			args[i] = id
		}
		rows, err := a.query(len(chunk), `SELECT `+itemRowColumns+` FROM tracker_items WHERE id IN (`+placeholders(len(chunk))+`)`, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			it, err := scanItemRow(rows)
			if err != nil {
				rows.Close()
				return err
			}
			if _, ok := a.items[it.ID]; !ok {
				a.items[it.ID] = it
				a.order = append(a.order, it.ID)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

func (a *apply) bulk(b *bulkUpdate) error {
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
	if len(b.AddTags) > 0 || len(b.AddWatchers) > 0 {
		if err := a.loadSets(its); err != nil {
			return err
		}
	}
	for _, it := range its {
		a.setField(it, "status", &it.Status, b.Status)
		for _, t := range b.AddTags {
			a.addTag(it, t)
		}
		for _, w := range b.AddWatchers {
			a.addWatcher(it, w)
		}
	}
	return nil
}

// finish writes what the record changed: every touched item's row (version
// on the record's own item, scoped_through on every other), the buffered
// child rows as multi-row inserts, the search postings and the projects'
// active counts.
func (a *apply) finish() error {
	rows := 0
	// One prepared statement for every row update of the record: a bulk
	// record updates thousands, and preparing is most of an exec's cost.
	var upd *sql.Stmt
	defer func() {
		if upd != nil {
			upd.Close()
		}
	}()
	for _, id := range a.order {
		it := a.items[id]
		if !it.touched {
			continue
		}
		if id == a.own {
			it.Version = a.seq
		} else {
			it.Scoped = a.seq
		}
		var err error
		if it.created {
			_, err = a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_items(`+itemRowColumns+`) VALUES(`+placeholders(20)+`)`,
				it.ID, it.Key, it.Project, it.Number, it.Title, it.Description, it.Status, it.Assignee, it.Parent, it.Reopens, it.Handoffs,
				it.Trashed, it.TrashRoot, it.Mark, it.MergedInto, it.Doc, it.Version, it.Scoped, it.Created, it.Updated)
			if err == nil {
				_, err = a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_item_keys(key, id) VALUES(?, ?) ON CONFLICT DO NOTHING`, it.Key, it.ID)
			}
		} else {
			if upd == nil {
				if upd, err = a.at.Prepare(a.ctx, a.tx, `UPDATE tracker_items SET key = ?, project = ?, number = ?, title = ?, description = ?, status = ?,
				assignee = ?, parent = ?, reopens = ?, handoffs = ?, trashed = ?, trash_root = ?, mark = ?, merged_into = ?,
				version = ?, scoped_through = ?, updated_at = ? WHERE id = ?`); err != nil {
					return err
				}
			}
			_, err = upd.ExecContext(a.ctx,
				it.Key, it.Project, it.Number, it.Title, it.Description, it.Status, it.Assignee, it.Parent, it.Reopens, it.Handoffs,
				it.Trashed, it.TrashRoot, it.Mark, it.MergedInto, it.Version, it.Scoped, it.Updated, it.ID)
		}
		if err != nil {
			return err
		}
		rows++
		if it.reindex {
			if err := a.reindex(it); err != nil {
				return err
			}
			rows++
		}
	}
	for _, b := range []*rowBuffer{a.tags, a.watchers, a.edges, a.hist} {
		n, err := b.flush(a.ctx, a.tx, a.at.Exec)
		if err != nil {
			return err
		}
		rows += n
	}
	keys := make([]string, 0, len(a.projects))
	for p := range a.projects {
		keys = append(keys, p)
	}
	sort.Strings(keys)
	for _, p := range keys {
		if err := a.recount(p); err != nil {
			return err
		}
	}
	a.at.Wrote(rows)
	return nil
}

// reindex replaces an item's search posting: title, description and its
// comments, in the apply's own transaction.
func (a *apply) reindex(it *itemRow) error {
	if !it.created {
		if _, err := a.at.Exec(a.ctx, a.tx, `DELETE FROM tracker_search WHERE rowid = ?`, it.Doc); err != nil {
			return err
		}
	}
	_, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_search(rowid, title, description, comments)
		VALUES(?, ?, ?, (SELECT coalesce(group_concat(body, ' '), '') FROM (SELECT body FROM tracker_comments WHERE item = ? ORDER BY seq)))`,
		it.Doc, it.Title, it.Description, it.ID)
	return err
}

// recount sets a project's active count (its items in progress and not in
// the trash). The project's row changes without the record being about it
// unless the record is the project's own.
func (a *apply) recount(project string) error {
	var active, cur int64
	if err := a.at.QueryRow(a.ctx, a.tx, `SELECT count(*) FROM tracker_items WHERE project = ? AND status = 'in_progress' AND trashed = 0`, project).Scan(&active); err != nil {
		return err
	}
	err := a.at.QueryRow(a.ctx, a.tx, `SELECT active FROM tracker_projects WHERE key = ?`, project).Scan(&cur)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && cur == active) {
		return nil
	}
	if err != nil {
		return err
	}
	col := "scoped_through"
	if project == a.ownProject {
		col = "version"
	}
	_, err = a.at.Exec(a.ctx, a.tx, `UPDATE tracker_projects SET active = ?, `+col+` = max(`+col+`, ?) WHERE key = ?`, active, a.seq, project)
	return err
}

func queryStrings(ctx context.Context, tx *sql.Tx, q string, args ...any) ([]string, error) {
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}
