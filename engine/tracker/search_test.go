package tracker_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// searchRef is one hit as SQLite answers it with the index joined to every
// item: the key, the item's own snippet (the MATCH on that row alone) and
// the score.
type searchRef struct {
	Key, Snippet string
	Score        float64
}

// refSearch ranks every live match of q (in project, when given) with the
// plainest statement there is.
func refSearch(t *testing.T, r *rig, q, project string) []searchRef {
	t.Helper()
	rows, err := r.n.DB().Query(`SELECT i.key, snippet(tracker_search, -1, '[', ']', '…', 12), bm25(tracker_search, 10.0, 3.0, 1.0)
		FROM tracker_search JOIN tracker_items i ON i.doc = tracker_search.rowid
		WHERE tracker_search MATCH ?1 AND i.trashed = 0 AND (?2 = '' OR i.project = ?2)
		ORDER BY bm25(tracker_search, 10.0, 3.0, 1.0), i.doc`, `"`+strings.ReplaceAll(q, " ", `" "`)+`"`, project)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []searchRef
	for rows.Next() {
		var h searchRef
		if err := rows.Scan(&h.Key, &h.Snippet, &h.Score); err != nil {
			t.Fatal(err)
		}
		h.Score = -h.Score
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// pagedSearch reads every page of q with limit hits a page.
func pagedSearch(t *testing.T, r *rig, q, project string, limit int) []searchRef {
	t.Helper()
	var out []searchRef
	sq := tracker.SearchQuery{Query: q, Project: project, Limit: limit}
	for {
		res, err := r.svc.SearchWorkItemsPage(context.Background(), engine.ReadOptions{}, sq)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			out = append(out, searchRef{h.Key, h.Snippet, h.Score})
		}
		if res.NextCursor == "" {
			return out
		}
		sq.Cursor = res.NextCursor
	}
}

// TestSearchSnippetsAreEachItemsOwn: every page of a search — ranked from
// the index's candidates, or, past a run of trashed best matches or with
// a project, from every match — answers exactly the live items the plain
// joined statement ranks, in its order, each with the score and the
// snippet SQLite gives that item on its own (the page's snippets are
// taken in one pass over the index, not one MATCH per row).
func TestSearchSnippetsAreEachItemsOwn(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	r.project("OPS")
	filler := strings.Repeat("river stone moss fern ", 6)
	for i := 1; i <= 40; i++ {
		project, title := "ENG", fmt.Sprintf("task %d", i)
		if i%3 == 0 {
			project = "OPS"
		}
		if i%7 == 0 {
			title += " otter"
		}
		desc := filler[:(i*7)%len(filler)] + " otter " + filler[:(i*11)%len(filler)]
		if i%5 == 0 {
			desc += " otter otter"
		}
		iw, err := r.svc.CreateWorkItem(ctx, r.op("create_work_item", project), tracker.NewWorkItem{Project: project, Title: title, Description: desc})
		if err != nil || iw.Item == nil {
			t.Fatalf("create: %+v %v", iw, err)
		}
		if i%4 == 0 {
			if _, err := r.svc.CommentOnWorkItem(ctx, r.op("comment_on_work_item", iw.Item.Key), iw.Item.Key, "bo", "an otter by the "+filler[:i%len(filler)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	check := func(stage string) {
		t.Helper()
		for _, c := range []struct {
			q, project string
			limit      int
		}{{"otter", "", 3}, {"otter", "", 20}, {"otter", "OPS", 4}, {"fern otter", "", 5}} {
			want := refSearch(t, r, c.q, c.project)
			got := pagedSearch(t, r, c.q, c.project, c.limit)
			if len(want) == 0 || !slices.Equal(got, want) {
				t.Fatalf("%s: search %q in %q by %d answered\n%v\nwant\n%v", stage, c.q, c.project, c.limit, got, want)
			}
		}
	}
	check("all live")
	// Trash the 18 best matches: a first page of 3 then finds 2 live
	// items among its 20 candidates and reads every match instead.
	for _, h := range refSearch(t, r, "otter", "")[:18] {
		if _, err := r.svc.TrashWorkItem(ctx, r.op("trash_work_item", h.Key), h.Key); err != nil {
			t.Fatal(err)
		}
	}
	check("best matches trashed")
}
