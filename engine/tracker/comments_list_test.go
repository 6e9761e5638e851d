package tracker_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestListCommentsPages: list_comments pages an item's whole thread
// newest first; a comment filed between two pages and an edit of one
// already seen neither repeat nor skip a comment, and a cursor that is
// not one of its own is refused.
func TestListCommentsPages(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	key := r.item("ENG", "A long thread", "")
	comment := func(body string) uint64 {
		t.Helper()
		cw, err := r.svc.Comment(ctx, r.op("comment", key), tracker.CommentInput{Key: key, Author: "ana", Body: body})
		if err != nil || cw.Outcome != engine.Applied || cw.Comment == nil {
			t.Fatalf("comment %q: %+v %v", body, cw, err)
		}
		return cw.Comment.ID
	}
	var ids []uint64
	for i := 0; i < 5; i++ {
		ids = append(ids, comment(fmt.Sprintf("note %d", i)))
	}
	first, err := r.svc.ListComments(ctx, engine.ReadOptions{}, key, "", 2)
	if err != nil || len(first.Comments) != 2 || first.NextCursor == "" || first.Level != engine.Linearizable {
		t.Fatalf("first page: %+v %v", first, err)
	}
	comment("filed between pages")
	if ed, err := r.svc.Comment(ctx, r.op("edit", key), tracker.CommentInput{Key: key, Author: "ana", Body: "note 4, edited", CommentID: ids[4]}); err != nil || ed.Outcome != engine.Applied {
		t.Fatalf("edit: %+v %v", ed, err)
	}
	seen := []uint64{first.Comments[0].ID, first.Comments[1].ID}
	for cursor := first.NextCursor; cursor != ""; {
		page, err := r.svc.ListComments(ctx, engine.ReadOptions{}, key, cursor, 2)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range page.Comments {
			seen = append(seen, c.ID)
		}
		cursor = page.NextCursor
	}
	want := []uint64{ids[4], ids[3], ids[2], ids[1], ids[0]}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("pages gave %v, want %v (newest first, none repeated or skipped)", seen, want)
	}
	_, err = r.svc.ListComments(ctx, engine.ReadOptions{}, key, "bm90LWEtY3Vyc29y", 2)
	refusedSaying(t, err, engine.CodeInvalidArgument, "list_comments")
	_, err = r.svc.ListComments(ctx, engine.ReadOptions{}, "ENG-99", "", 2)
	refusedSaying(t, err, engine.CodeNotFound, "ENG-99")
}
