package tracker_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

func refusedSaying(t *testing.T, err error, code engine.Code, words string) {
	t.Helper()
	var ref *engine.Refusal
	if !errors.As(err, &ref) || ref.Code != code || !strings.Contains(ref.Message, words) {
		t.Fatalf("want %s naming %q, got %v", code, words, err)
	}
}

// TestCommentsLeaveTheVersion: a comment does not move its item's version,
// so an update decided against the version read before it is not refused
// stale; each comment has an id and a version; only its author edits or
// deletes it; the history says who did each, at which position.
func TestCommentsLeaveTheVersion(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := engine.WithActor(context.Background(), "seat:ana")
	r.project("ENG")
	key := r.item("ENG", "Login times out", "")
	v := r.get(key).Version
	cw, err := r.svc.Comment(ctx, r.op("comment", key), tracker.CommentInput{Key: key, Author: "ana", Body: "seen it on staging"})
	if err != nil || cw.Outcome != engine.Applied || cw.Comment == nil || cw.Comment.ID == 0 || cw.Comment.Version != cw.Comment.ID {
		t.Fatalf("comment: %+v %v", cw, err)
	}
	if got := r.get(key).Version; got != v {
		t.Fatalf("a comment moved the item's version from %d to %d", v, got)
	}
	title := "Login times out on slow links"
	if out, err := r.svc.UpdateWorkItem(ctx, r.op("update", key), key, v, tracker.ItemPatch{Title: &title}); err != nil || out.Outcome != engine.Applied {
		t.Fatalf("an update at the version read before the comment: %+v %v", out, err)
	}
	id := cw.Comment.ID
	_, err = r.svc.Comment(ctx, r.op("edit", key), tracker.CommentInput{Key: key, Author: "bo", Body: "not mine", CommentID: id})
	refusedSaying(t, err, engine.CodeInvalidArgument, "only its author")
	ed, err := r.svc.Comment(ctx, r.op("edit", key), tracker.CommentInput{Key: key, Author: "ana", Body: "seen it on staging and prod", CommentID: id})
	if err != nil || ed.Comment == nil || ed.Comment.ID != id || ed.Comment.Version <= id || ed.Comment.Body != "seen it on staging and prod" {
		t.Fatalf("edit: %+v %v", ed, err)
	}
	got, err := r.svc.GetWorkItem(ctx, engine.ReadOptions{}, key)
	if err != nil || len(got.Comments) != 1 || got.Comments[0] != *ed.Comment {
		t.Fatalf("get_work_item's comments: %+v %v", got.Comments, err)
	}
	v2 := got.Item.Version
	if del, err := r.svc.Comment(ctx, r.op("delete", key), tracker.CommentInput{Key: key, Author: "ana", CommentID: id, Delete: true}); err != nil || del.Outcome != engine.Applied {
		t.Fatalf("delete: %+v %v", del, err)
	}
	got, _ = r.svc.GetWorkItem(ctx, engine.ReadOptions{}, key)
	if len(got.Comments) != 0 || got.Item.Version != v2 {
		t.Fatalf("after the delete: comments %+v, version %d (was %d)", got.Comments, got.Item.Version, v2)
	}
	_, err = r.svc.Comment(ctx, r.op("edit", key), tracker.CommentInput{Key: key, Author: "ana", Body: "again", CommentID: id})
	refusedSaying(t, err, engine.CodeNotFound, "does not exist")
	h, err := r.svc.ListItemHistory(ctx, engine.ReadOptions{}, key, "", 4)
	if err != nil || len(h.Changes) != 4 {
		t.Fatalf("history: %+v %v", h, err)
	}
	for i, want := range []string{"comment_deleted", "comment_edited", "title", "comment"} {
		c := h.Changes[i]
		if c.Field != want || c.By != "seat:ana" || (want != "title" && c.New != "ana") {
			t.Errorf("change %d: %+v, want %s by seat:ana", i, c, want)
		}
		if _, err := engine.ParsePosition(c.Position); err != nil {
			t.Errorf("change %d: position %q: %v", i, c.Position, err)
		}
	}
}

// TestHistoryPages: the history pages newest first; a page's cursor goes
// on with older changes, none repeated or skipped, even with a write in
// between; a cursor of another kind is refused.
func TestHistoryPages(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := engine.WithActor(context.Background(), "operator")
	r.project("ENG")
	key := r.item("ENG", "One", "")
	for _, st := range []string{tracker.StatusInProgress, tracker.StatusBlocked, tracker.StatusDone} {
		if _, err := r.svc.UpdateWorkItem(ctx, r.op("update", key), key, 0, tracker.ItemPatch{Status: &st}); err != nil {
			t.Fatal(err)
		}
	}
	// created, assignee/parent unchanged: created + 3 status changes.
	p1, err := r.svc.ListItemHistory(ctx, engine.ReadOptions{}, key, "", 2)
	if err != nil || len(p1.Changes) != 2 || p1.NextCursor == "" || p1.Changes[0].New != tracker.StatusDone {
		t.Fatalf("page 1: %+v %v", p1, err)
	}
	st := tracker.StatusOpen
	if _, err := r.svc.UpdateWorkItem(ctx, r.op("update", key), key, 0, tracker.ItemPatch{Status: &st}); err != nil {
		t.Fatal(err)
	}
	p2, err := r.svc.ListItemHistory(ctx, engine.ReadOptions{}, key, p1.NextCursor, 2)
	if err != nil || len(p2.Changes) != 2 || p2.NextCursor != "" {
		t.Fatalf("page 2: %+v %v", p2, err)
	}
	if p2.Changes[0].New != tracker.StatusInProgress || p2.Changes[1].Field != "created" {
		t.Fatalf("page 2 does not go on where page 1 ended: %+v", p2.Changes)
	}
	a, _ := engine.ParsePosition(p1.Changes[1].Position)
	b, _ := engine.ParsePosition(p2.Changes[0].Position)
	if b.Seq >= a.Seq {
		t.Fatalf("page 2 is not older than page 1: %s then %s", p1.Changes[1].Position, p2.Changes[0].Position)
	}
	_, err = r.svc.ListItemHistory(ctx, engine.ReadOptions{}, key, "bm90LWEtY3Vyc29y", 2)
	refusedSaying(t, err, engine.CodeInvalidArgument, "start again without it")
}

// TestArchivedProjectTakesNoNewItems: an archived project refuses a create
// and a move into it with a sentence saying what to do, leaves
// list_projects unless archived ones are asked for, and takes items again
// once brought back.
func TestArchivedProjectTakesNoNewItems(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	r.project("OPS")
	key := r.item("OPS", "Rotate certs", "")
	yes, no := true, false
	pw, err := r.svc.UpdateProject(ctx, r.op("update_project", "ENG"), "ENG", nil, &yes)
	if err != nil || pw.Outcome != engine.Applied || pw.Project == nil || !pw.Project.Archived {
		t.Fatalf("archive: %+v %v", pw, err)
	}
	_, err = r.svc.CreateWorkItem(ctx, r.op("create_work_item", "ENG"), tracker.NewWorkItem{Project: "ENG", Title: "x"})
	refusedSaying(t, err, engine.CodeInvalidArgument, "ENG is archived")
	_, err = r.svc.MoveWorkItem(ctx, r.op("move", key), key, "ENG")
	refusedSaying(t, err, engine.CodeInvalidArgument, "ENG is archived")
	list, _ := r.svc.ListProjects(ctx, engine.ReadOptions{})
	all, _ := r.svc.ListProjectsIn(ctx, engine.ReadOptions{}, true)
	if len(list.Projects) != 1 || list.Projects[0].Key != "OPS" || len(all.Projects) != 2 {
		t.Fatalf("list_projects %+v, with the archived %+v", list.Projects, all.Projects)
	}
	name := "Engineering"
	if pw, err = r.svc.UpdateProject(ctx, r.op("update_project", "ENG"), "ENG", &name, &no); err != nil || pw.Project.Archived || pw.Project.Name != name {
		t.Fatalf("bring back: %+v %v", pw, err)
	}
	r.item("ENG", "Works again", "")
	got, err := r.svc.GetProject(ctx, engine.ReadOptions{}, "ENG")
	if err != nil || got.Counts[tracker.StatusOpen] != 1 || got.Project.Name != name {
		t.Fatalf("get_project: %+v %v", got, err)
	}
	_, err = r.svc.UpdateProject(ctx, r.op("update_project", "ENG"), "ENG", &name, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.svc.UpdateProject(ctx, engine.WriteOptions{IfMatch: got.Project.Version}, "ENG", nil, &yes)
	refusedSaying(t, err, engine.CodeStale, "read it again")
}
