package trackapply_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog/applytest"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// TestScripts runs the apply side's scripts (testdata/*.txt; the
// commands are applytest's, the record lines below): tracker records
// appended to an in-memory log and applied on real SQLite files, the rows
// after every command held to the same records replayed from scratch.
// Rewrite the expected output with -rewrite.
func TestScripts(t *testing.T) {
	applytest.Run(t, "testdata", applytest.Domain{Domain: trackapply.Domain{}, Tables: tables, Record: trackerRecord,
		Checks: []string{`INSERT INTO tracker_search(tracker_search) VALUES('integrity-check')`}})
}

// tables are the tracker's tables as the scripts print them: an instant
// as seconds since the log's first, an item by its key where it is one.
var tables = []applytest.Table{
	{Name: "tracker_projects", Order: "key", Print: "key, name, last_number, active, version, scoped_through, (created_at - $T0) / 1000000000 AS created"},
	{Name: "tracker_project_state", Order: "key"},
	{Name: "tracker_items", Order: "doc", Print: "key, id, title, status, assignee, parent, version, scoped_through, reopens, handoffs, trashed, trash_root, mark, merged_into, (updated_at - $T0) / 1000000000 AS updated"},
	{Name: "tracker_item_fields", Order: "id"},
	{Name: "tracker_item_keys", Order: "key"},
	{Name: "tracker_tags", Order: "item, tag"},
	{Name: "tracker_watchers", Order: "item, watcher"},
	{Name: "tracker_edges", Order: "item, kind, other"},
	{Name: "tracker_comments", Order: "item, seq", Print: "item, seq, author, body"},
	{Name: "tracker_comment_versions", Order: "item, seq"},
	{Name: "tracker_history", Order: "item, seq, n", Print: "item, seq, n, field, old, new, handoffs"},
	{Name: "tracker_record_by", Order: "seq"},
	{Name: "tracker_purged", Order: "id"},
	{Name: "tracker_mirror_due", Order: "step", Print: "item, other, digest, seq"},
	{Name: "tracker_search", Order: "rowid", Compare: "rowid, *", Print: "rowid, title, description, comments"},
}

// trackerRecord is the record a script line names. Items are named by
// their ids; a scope is what the service declares for the same record.
func trackerRecord(verb string, a applytest.Args) (*record.Record, error) {
	id := a.Str("id")
	item := func(kind string, payload any, scope ...string) (*record.Record, error) {
		return applytest.Make(kind, trackrec.ItemSubject(id), append([]string{trackrec.ItemScope(id)}, scope...), payload)
	}
	switch verb {
	case "project":
		key := a.Str("key")
		return applytest.Make(trackrec.KindCreateProject, trackrec.ProjectSubject(key), []string{trackrec.ProjectScope(key)}, trackrec.CreateProject{Key: key, Name: a.Str("name")})
	case "project-update":
		return projectUpdate(a)
	case "create":
		return create(a)
	case "update":
		return update(a)
	case "mirror":
		m := trackrec.MirrorEdges{ID: id, Add: edges(a.Strs("add")), Remove: edges(a.Strs("remove"))}
		return item(trackrec.KindMirrorEdges, m, others(append(m.Add, m.Remove...))...)
	case "comment":
		return item(trackrec.KindComment, trackrec.Comment{ID: id, Author: a.Str("author"), Body: a.Str("body")})
	case "edit-comment":
		n, err := a.Int("comment")
		return withErr(err, func() (*record.Record, error) {
			return item(trackrec.KindEditComment, trackrec.EditComment{ID: id, Comment: uint64(n), Author: a.Str("author"), Body: a.Str("body"), Delete: a.Has("delete")})
		})
	case "mark":
		return item(trackrec.KindMark, trackrec.Mark{ID: id, Mark: a.Str("mark")})
	case "move":
		return item(trackrec.KindMove, trackrec.Move{ID: id, To: a.Str("to")}, trackrec.ProjectScope(a.Str("to")))
	case "merge":
		return item(trackrec.KindMergeDuplicate, trackrec.MergeDuplicate{ID: id, Into: a.Str("into")}, trackrec.ItemScope(a.Str("into")))
	case "trash":
		return item(trackrec.KindTrash, trackrec.Trash{ID: id, Root: a.Str("root")})
	case "restore":
		return item(trackrec.KindRestore, trackrec.Restore{ID: id})
	case "purge":
		return item(trackrec.KindPurge, trackrec.Purge{ID: id})
	case "bulk":
		return bulk(a)
	case "empty-trash":
		p := a.Str("project")
		return applytest.Make(trackrec.KindEmptyTrash, trackrec.ProjectSubject(p), []string{trackrec.ProjectScope(p)}, trackrec.EmptyTrash{Project: p})
	}
	return nil, fmt.Errorf("no record %q", verb)
}

func withErr(err error, f func() (*record.Record, error)) (*record.Record, error) {
	if err != nil {
		return nil, err
	}
	return f()
}

func projectUpdate(a applytest.Args) (*record.Record, error) {
	key := a.Str("key")
	u := trackrec.UpdateProject{Key: key, Name: a.Ptr("name")}
	if a.Has("archived") {
		v := a.Str("archived") == "true"
		u.Archived = &v
	}
	return applytest.Make(trackrec.KindUpdateProject, trackrec.ProjectSubject(key), []string{trackrec.ProjectScope(key)}, u)
}

// create is a create: on its item's subject, or on its project's where
// the line says on=project (how a create was written before creates took
// subjects of their own); at trackrec.FieldsFormat where it sets an item field.
func create(a applytest.Args) (*record.Record, error) {
	id, p := a.Str("id"), a.Str("project")
	c := trackrec.CreateWorkItem{ID: id, Project: p, Title: a.Str("title"), Description: a.Str("desc"), Status: trackrec.StatusOpen,
		Assignee: a.Str("assignee"), Parent: a.Str("parent"), Tags: a.Strs("tags"), Edges: edges(a.Strs("edges")),
		Priority: a.Str("priority"), Due: a.Str("due"), Type: a.Str("type")}
	if a.Has("status") {
		c.Status = a.Str("status")
	}
	est, err := a.Float("estimate")
	if err != nil {
		return nil, err
	}
	if est != nil {
		c.Estimate = *est
	}
	if c.Number, err = a.Int("number"); err != nil {
		return nil, err
	}
	scope := []string{trackrec.ProjectScope(p), trackrec.ItemScope(id)}
	if c.Parent != "" {
		scope = append(scope, trackrec.ItemScope(c.Parent))
	}
	scope = append(scope, others(c.Edges)...)
	subject := trackrec.ItemSubject(id)
	if a.Str("on") == "project" {
		subject = trackrec.ProjectSubject(p)
	}
	rec, err := applytest.Make(trackrec.KindCreateWorkItem, subject, scope, c)
	if err == nil && (c.Priority != "" || c.Due != "" || c.Estimate != 0 || c.Type != "") {
		rec.Version = trackrec.FieldsFormat
	}
	return rec, err
}

func update(a applytest.Args) (*record.Record, error) {
	id := a.Str("id")
	u := trackrec.UpdateWorkItem{ID: id, Title: a.Ptr("title"), Description: a.Ptr("desc"), Status: a.Ptr("status"), Assignee: a.Ptr("assignee"),
		Parent: a.Ptr("parent"), AddTags: a.Strs("add-tags"), RemoveTags: a.Strs("remove-tags"), AddWatchers: a.Strs("add-watchers"),
		RemoveWatchers: a.Strs("remove-watchers"), AddEdges: edges(a.Strs("add-edges")), RemoveEdges: edges(a.Strs("remove-edges")),
		Priority: a.Ptr("priority"), Due: a.Ptr("due"), Type: a.Ptr("type")}
	var err error
	if u.Estimate, err = a.Float("estimate"); err != nil {
		return nil, err
	}
	scope := []string{trackrec.ItemScope(id)}
	if u.Parent != nil && *u.Parent != "" {
		scope = append(scope, trackrec.ItemScope(*u.Parent))
	}
	scope = append(scope, others(append(u.AddEdges, u.RemoveEdges...))...)
	rec, err := applytest.Make(trackrec.KindUpdateWorkItem, trackrec.ItemSubject(id), scope, u)
	if err == nil && (u.Priority != nil || u.Due != nil || u.Estimate != nil || u.Type != nil) {
		rec.Version = trackrec.FieldsFormat
	}
	return rec, err
}

func bulk(a applytest.Args) (*record.Record, error) {
	p := a.Str("project")
	b := trackrec.BulkUpdate{Project: p, Items: a.Strs("items"), AddTags: a.Strs("add-tags"), AddWatchers: a.Strs("add-watchers"),
		Status: a.Ptr("status"), Assignee: a.Ptr("assignee")}
	kind := trackrec.KindBulkUpdate
	if b.Assignee != nil {
		kind = trackrec.KindBulkSet
	}
	return applytest.Make(kind, trackrec.ProjectSubject(p), []string{trackrec.ProjectScope(p)}, b)
}

// edges reads kind:other pairs (depends_on:b).
func edges(vals []string) []trackrec.EdgeRef {
	var out []trackrec.EdgeRef
	for _, v := range vals {
		kind, other, ok := strings.Cut(v, ":")
		if !ok {
			continue
		}
		out = append(out, trackrec.EdgeRef{Kind: kind, Other: other})
	}
	return out
}

// others are the scopes of the items edges point at.
func others(es []trackrec.EdgeRef) []string {
	var out []string
	for _, e := range es {
		out = append(out, trackrec.ItemScope(e.Other))
	}
	return out
}
