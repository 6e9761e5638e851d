package trackapply

// The records about one item (or a pair: a merge), by kind: what each
// changes on the rows an apply holds. A record that is moot here (its
// item or project gone) changes nothing.

import (
	"database/sql"
	"errors"
	"fmt"
	"sort"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

func (a *apply) createItem(c *trackrec.CreateWorkItem) error {
	ctr, filed, err := a.counter(c.Project, c.ID)
	if err != nil || ctr == nil || filed {
		return err // no such project, or filed already: moot
	}
	// A create record is about its new item; one written before creates
	// took their own subject is about the project, whose version it moves.
	if a.own == "" {
		a.ownProject = c.Project
	}
	// The number is the project's next, taken here in log order, so
	// concurrent creates and moves into the project never collide.
	number := ctr.take(a.seq, a.own == "")
	if c.Parent != "" {
		if p, err := a.item(c.Parent); err != nil {
			return err
		} else if p == nil {
			c.Parent = "" // the parent is gone: file the item at the top
		}
	}
	it := &itemRow{ID: c.ID, Key: fmt.Sprintf("%s-%d", c.Project, number), Project: c.Project, Number: number,
		Status: c.Status, Doc: int64(a.seq), Created: a.ts, Updated: a.ts, created: true, reindex: true,
		tags: map[string]bool{}, watchers: map[string]bool{}, edges: map[trackrec.EdgeRef]bool{}}
	a.items[c.ID] = it
	a.order = append(a.order, c.ID)
	a.own = c.ID
	a.change(it, "created", "", it.Key)
	it.Title, it.Description = c.Title, c.Description
	a.setField(it, "assignee", &it.Assignee, &c.Assignee)
	a.setField(it, "parent", &it.Parent, &c.Parent)
	a.createdFields(it, c)
	if c.Status == trackrec.StatusInProgress {
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
			a.owe(c.ID, e.Other)
		}
	}
	return nil
}

// setsChanged says whether u adds or removes a tag, a watcher or an edge:
// only then does its apply read the item's sets (loadSets), which were a
// statement on every edit of a title or a status.
func setsChanged(u *trackrec.UpdateWorkItem) bool {
	return len(u.AddTags)+len(u.RemoveTags)+len(u.AddWatchers)+len(u.RemoveWatchers)+len(u.AddEdges)+len(u.RemoveEdges) > 0
}

func (a *apply) updateItem(u *trackrec.UpdateWorkItem) error {
	it, err := a.item(u.ID)
	if err != nil || it == nil {
		return err
	}
	if setsChanged(u) {
		if err := a.loadSets([]*itemRow{it}); err != nil {
			return err
		}
	}
	a.setField(it, "title", &it.Title, u.Title)
	a.setField(it, "description", &it.Description, u.Description)
	a.setField(it, "status", &it.Status, u.Status)
	a.setField(it, "assignee", &it.Assignee, u.Assignee)
	a.setItemFields(it, u.Priority, u.Due, u.Estimate, u.Type)
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
			a.owe(u.ID, e.Other)
		}
	}
	for _, e := range u.RemoveEdges {
		if err := a.removeEdge(it, e, true); err != nil {
			return err
		}
		a.owe(u.ID, e.Other)
	}
	return nil
}

func (a *apply) mirror(m *trackrec.MirrorEdges) error {
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

func (a *apply) mark(m *trackrec.Mark) error {
	it, err := a.item(m.ID)
	if err != nil || it == nil {
		return err
	}
	a.setField(it, "mark", &it.Mark, &m.Mark)
	it.touched = true // a mark written twice still moves the version
	return nil
}

func (a *apply) move(m *trackrec.Move) error {
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

func (a *apply) merge(m *trackrec.MergeDuplicate) error {
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
	if !trackrec.Closed(dup.Status) {
		cancelled := trackrec.StatusCancelled
		a.setField(dup, "status", &dup.Status, &cancelled)
	}
	a.addEdge(dup, trackrec.EdgeRef{Kind: trackrec.EdgeDuplicates, Other: into.ID}, true)
	// The item merged into is rewritten without the record being about it:
	// its mirror and the duplicate's watchers carry scoped_through.
	a.addEdge(into, trackrec.EdgeRef{Kind: trackrec.EdgeDuplicatedBy, Other: dup.ID}, false)
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

func (a *apply) trash(t *trackrec.Trash) error {
	it, err := a.item(t.ID)
	if err != nil || it == nil || it.Trashed != 0 {
		return err
	}
	it.Trashed, it.TrashRoot = int64(a.seq), t.Root
	a.change(it, "trashed", "", t.Root)
	a.projects[it.Project] = true
	return nil
}

func (a *apply) restore(r *trackrec.Restore) error {
	it, err := a.item(r.ID)
	if err != nil || it == nil || it.Trashed == 0 {
		return err
	}
	a.change(it, "restored", it.TrashRoot, "")
	it.Trashed, it.TrashRoot = 0, ""
	a.projects[it.Project] = true
	return nil
}
