package tracker_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

func (r *rig) list(f tracker.ListFilter) tracker.ItemList {
	r.t.Helper()
	res, err := r.svc.ListWorkItems(context.Background(), engine.ReadOptions{}, f)
	if err != nil {
		r.t.Fatalf("list %+v: %v", f, err)
	}
	return res
}

func itemKeys(items []tracker.WorkItem) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, it.Key)
	}
	return out
}

func sameKeys(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %v, want %v", what, got, want)
	}
}

// TestListFiltersTakeSeveralValues: each filter takes several values, the
// batch get answers the keys it finds and names the others, the trash is
// listed on its own, updated_since and the sorts narrow and order, and
// list_tags counts.
func TestListFiltersTakeSeveralValues(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	r.project("OPS")
	mk := func(project, title, status, priority, assignee string, tags ...string) string {
		w, err := r.svc.CreateWorkItem(ctx, r.op("create_work_item", project), tracker.NewWorkItem{Project: project, Title: title,
			Status: status, Priority: priority, Assignee: assignee, Tags: tags})
		if err != nil {
			t.Fatal(err)
		}
		return w.Item.Key
	}
	mk("ENG", "one", "open", "low", "ana", "ui")             // ENG-1
	mk("ENG", "two", "blocked", "urgent", "bo", "ui", "api") // ENG-2
	mk("ENG", "three", "done", "high", "ana")                // ENG-3
	mk("OPS", "four", "open", "high", "cy", "api")           // OPS-1
	mk("OPS", "five", "in_progress", "", "bo")               // OPS-2
	sameKeys(t, "status", itemKeys(r.list(tracker.ListFilter{Status: "open, blocked"}).Items), []string{"ENG-1", "ENG-2", "OPS-1"})
	sameKeys(t, "priority", itemKeys(r.list(tracker.ListFilter{Priority: "high,urgent"}).Items), []string{"ENG-2", "ENG-3", "OPS-1"})
	sameKeys(t, "assignee", itemKeys(r.list(tracker.ListFilter{Assignee: "bo,cy"}).Items), []string{"ENG-2", "OPS-1", "OPS-2"})
	sameKeys(t, "tag", itemKeys(r.list(tracker.ListFilter{Tag: "ui,api", Project: "ENG,OPS"}).Items), []string{"ENG-1", "ENG-2", "OPS-1"})
	sameKeys(t, "sort priority", itemKeys(r.list(tracker.ListFilter{Sort: "priority"}).Items), []string{"ENG-2", "ENG-3", "OPS-1", "ENG-1", "OPS-2"})
	batch := r.list(tracker.ListFilter{Keys: "OPS-2,ENG-1,ENG-99"})
	sameKeys(t, "keys", itemKeys(batch.Items), []string{"ENG-1", "OPS-2"})
	sameKeys(t, "missing", batch.Missing, []string{"ENG-99"})

	mark := time.Now().UTC()
	if _, err := r.svc.TrashWorkItem(ctx, r.op("trash", "ENG-3"), "ENG-3"); err != nil {
		t.Fatal(err)
	}
	sameKeys(t, "trash", itemKeys(r.list(tracker.ListFilter{Trashed: true}).Items), []string{"ENG-3"})
	sameKeys(t, "updated_since", itemKeys(r.list(tracker.ListFilter{Trashed: true, UpdatedSince: mark.Add(-time.Second).Format(time.RFC3339)}).Items), []string{"ENG-3"})
	sameKeys(t, "updated_since later", itemKeys(r.list(tracker.ListFilter{UpdatedSince: mark.Add(time.Hour).Format(time.RFC3339)}).Items), []string{})

	tags, err := r.svc.ListTags(ctx, engine.ReadOptions{}, "")
	if err != nil || len(tags.Tags) != 2 || tags.Tags[0] != (tracker.TagCount{Tag: "api", Count: 2}) || tags.Tags[1] != (tracker.TagCount{Tag: "ui", Count: 2}) {
		t.Fatalf("tags %+v %v", tags.Tags, err)
	}
	eng, err := r.svc.ListTags(ctx, engine.ReadOptions{}, "ENG")
	if err != nil || len(eng.Tags) != 2 || eng.Tags[0] != (tracker.TagCount{Tag: "ui", Count: 2}) || eng.Tags[1] != (tracker.TagCount{Tag: "api", Count: 1}) {
		t.Fatalf("ENG tags %+v %v", eng.Tags, err)
	}
	for _, f := range []tracker.ListFilter{{Status: "open,later"}, {Priority: "p1"}, {Sort: "title"}, {UpdatedSince: "yesterday"}, {Keys: "ENG-1,eng"}} {
		_, err := r.svc.ListWorkItems(ctx, engine.ReadOptions{}, f)
		refusedWith(t, "bad filter", err, engine.CodeInvalidArgument)
	}
}

// walk pages through a listing, creating an item after the first page;
// it answers every key seen, in order, and fails on a repeat.
func walk(t *testing.T, r *rig, f tracker.ListFilter, between func()) []string {
	t.Helper()
	var seen []string
	first := r.list(f)
	seen = append(seen, itemKeys(first.Items)...)
	between()
	for c := first.NextCursor; c != ""; {
		f.Cursor = c
		page := r.list(f)
		if page.SeenThrough.Seq < first.SeenThrough.Seq {
			t.Fatalf("a later page read at %d, behind the first page's %d", page.SeenThrough.Seq, first.SeenThrough.Seq)
		}
		for _, k := range itemKeys(page.Items) {
			if slices.Contains(seen, k) {
				t.Fatalf("%s answered twice", k)
			}
			seen = append(seen, k)
		}
		c = page.NextCursor
	}
	return seen
}

// TestCursorPagesNeitherSkipNorRepeat: an item created between pages
// neither shifts a row onto the next page twice nor out of it, on the key
// order and on a newest-first sort; a cursor carries the first page's
// position as the next pages' floor (a forged one past the log is waited
// for and refused behind), and a cursor of another query is refused.
func TestCursorPagesNeitherSkipNorRepeat(t *testing.T) {
	r := newRig(t, time.Now(), node.Config{ReadBudget: 300 * time.Millisecond})
	ctx := context.Background()
	r.project("ENG")
	for i := 1; i <= 7; i++ {
		r.item("ENG", "item "+strconv.Itoa(i), "")
	}
	all := []string{"ENG-1", "ENG-2", "ENG-3", "ENG-4", "ENG-5", "ENG-6", "ENG-7"}
	got := walk(t, r, tracker.ListFilter{Project: "ENG", Limit: 3}, func() { r.item("ENG", "new", "") })
	sameKeys(t, "key order", got, append(slices.Clone(all), "ENG-8"))

	got = walk(t, r, tracker.ListFilter{Project: "ENG", Limit: 3, Sort: "-created"}, func() { r.item("ENG", "newer", "") })
	sameKeys(t, "newest first", got, []string{"ENG-8", "ENG-7", "ENG-6", "ENG-5", "ENG-4", "ENG-3", "ENG-2", "ENG-1"})

	first := r.list(tracker.ListFilter{Project: "ENG", Limit: 3})
	_, err := r.svc.ListWorkItems(ctx, engine.ReadOptions{}, tracker.ListFilter{Project: "ENG", Status: "open", Limit: 3, Cursor: first.NextCursor})
	refusedWith(t, "a cursor of another query", err, engine.CodeInvalidArgument, "another query")
	_, err = r.svc.ListWorkItems(ctx, engine.ReadOptions{}, tracker.ListFilter{Project: "ENG", Limit: 3, Cursor: "RU5HLTM"})
	refusedWith(t, "a key cursor of the old form", err, engine.CodeInvalidArgument, "start again")

	// The floor: the same cursor with its position moved past the log's
	// end is waited for, for the read budget, and refused behind.
	raw, _ := base64.RawURLEncoding.DecodeString(first.NextCursor)
	var c map[string]any
	if err := json.Unmarshal(raw, &c); err != nil {
		t.Fatal(err)
	}
	p, err := engine.ParsePosition(c["p"].(string))
	if err != nil || p.Seq != first.SeenThrough.Seq {
		t.Fatalf("the cursor carries %v, the page read at %v", c["p"], first.SeenThrough)
	}
	p.Seq += 1000
	c["p"] = p.Token()
	raw, _ = json.Marshal(c)
	_, err = r.svc.ListWorkItems(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, tracker.ListFilter{Project: "ENG", Limit: 3, Cursor: base64.RawURLEncoding.EncodeToString(raw)})
	refusedWith(t, "a floor past the log", err, engine.CodeBehind)
}

// TestSearchPages: search answers a page at a time, every hit once, and
// refuses a cursor of another query.
func TestSearchPages(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	for i := 1; i <= 5; i++ {
		r.item("ENG", "flamingo "+strconv.Itoa(i), "")
	}
	var seen []string
	q := tracker.SearchQuery{Query: "flamingo", Limit: 2}
	for pages := 0; ; pages++ {
		res, err := r.svc.SearchWorkItemsPage(ctx, engine.ReadOptions{}, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			if slices.Contains(seen, h.Key) {
				t.Fatalf("%s answered twice", h.Key)
			}
			seen = append(seen, h.Key)
		}
		if res.NextCursor == "" {
			break
		}
		if pages == 0 {
			_, err := r.svc.SearchWorkItemsPage(ctx, engine.ReadOptions{}, tracker.SearchQuery{Query: "flamingo 3", Limit: 2, Cursor: res.NextCursor})
			refusedWith(t, "a search cursor of another query", err, engine.CodeInvalidArgument, "another query")
		}
		q.Cursor = res.NextCursor
	}
	if len(seen) != 5 {
		t.Fatalf("search pages answered %v", seen)
	}
}

// TestSearchPastTrashedCandidates: when the best-ranked matches are all in
// the trash — more of them than the candidates the index is first asked
// for — search still answers the live items, in rank order, a page at a
// time, each once.
func TestSearchPastTrashedCandidates(t *testing.T) {
	r := newRig(t, time.Now())
	ctx := context.Background()
	r.project("ENG")
	const trashed, live = 30, 5
	for i := 1; i <= trashed+live; i++ {
		r.item("ENG", "heron "+strconv.Itoa(i), "")
	}
	for i := 1; i <= trashed; i++ {
		if _, err := r.svc.TrashWorkItem(ctx, engine.WriteOptions{}, "ENG-"+strconv.Itoa(i)); err != nil {
			t.Fatal(err)
		}
	}
	var seen []string
	q := tracker.SearchQuery{Query: "heron", Limit: 2}
	for {
		res, err := r.svc.SearchWorkItemsPage(ctx, engine.ReadOptions{}, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range res.Hits {
			n, _ := strconv.Atoi(strings.TrimPrefix(h.Key, "ENG-"))
			if n <= trashed || slices.Contains(seen, h.Key) {
				t.Fatalf("search answered %s (trashed, or twice) after %v", h.Key, seen)
			}
			seen = append(seen, h.Key)
		}
		if res.NextCursor == "" {
			break
		}
		q.Cursor = res.NextCursor
	}
	if len(seen) != live {
		t.Fatalf("search answered %v; want the %d live items", seen, live)
	}
}

// TestEmptySearchAnswersAnEmptyList: a search nothing matches answers
// "hits": [], with or without a project, never null (a client maps the
// list; the dashboard's search page broke on null).
func TestEmptySearchAnswersAnEmptyList(t *testing.T) {
	r := newRig(t, time.Now())
	r.project("ENG")
	r.item("ENG", "heron", "")
	for _, q := range []tracker.SearchQuery{{Query: "albatross"}, {Query: "albatross", Project: "ENG"}} {
		res, err := r.svc.SearchWorkItemsPage(context.Background(), engine.ReadOptions{}, q)
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(res)
		if err != nil || !strings.Contains(string(b), `"hits":[]`) {
			t.Fatalf("an empty search answered %s (%v), want \"hits\":[]", b, err)
		}
	}
}
