package vectors_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/vectors"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

var ctx = context.Background()

func specs() []statelog.Spec { return append(node.Builtin(), vectors.Spec) }

func open(t *testing.T, dir string) (*node.Node, *tracker.Service, *vectors.Service) {
	t.Helper()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, Domains: specs()})
	return n, n.Tracker(), n.Service(vecrec.Domain).(*vectors.Service)
}

// must answers v, and fails the test (a panic) on err.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func create(t *testing.T, trk *tracker.Service, title, desc string) string {
	t.Helper()
	w := must(trk.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: title, Description: desc}))
	if w.Outcome != engine.Applied {
		t.Fatalf("create %q: %s", title, w.Outcome)
	}
	return w.Item.Key
}

// waitEmbedded waits until kind has want vectors on this node (the duty
// runs under the interim rule: this node is the only one).
func waitEmbedded(t *testing.T, vs *vectors.Service, kind semantic.Kind, want int) {
	t.Helper()
	enginetest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		// Nearest catches the index up with the rows.
		if _, err := vs.Nearest(ctx, "x", []semantic.Kind{kind}, 1); err != nil {
			return err
		}
		if got := vs.Embedded(kind); got != want {
			return fmt.Errorf("%s: %d vectors, want %d", kind, got, want)
		}
		return nil
	})
}

// row reads a source's vector row: its text hash and sequence; ok false
// where there is none.
func row(t *testing.T, n *node.Node, source string) (hash string, seq uint64, ok bool) {
	t.Helper()
	_, err := n.Replica(vecrec.Domain).Read(ctx, engine.ReadOptions{Level: engine.Stale}, func(ctx context.Context, tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT text_hash, seq FROM vectors WHERE source = ?`, source).Scan(&hash, &seq)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		ok = err == nil
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return hash, seq, ok
}

// TestDutyEmbedsSearchesForgets: on a node running the vectors domain,
// the embedding duty embeds every work item, comment and page; the
// searches rank by words and vectors fused and find an item by meaning
// where its words do not all match; an edit is embedded again; a purge
// forgets the item's vector (its row, and on the stream its message is
// replaced by the forget).
func TestDutyEmbedsSearchesForgets(t *testing.T) {
	n, trk, vs := open(t, "")
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"))
	sso := create(t, trk, "Users cannot log in with SSO", "Single sign-on via the identity provider rejects valid accounts since Monday.")
	dark := create(t, trk, "Dark mode colours are wrong in the sidebar", "The sidebar keeps the light palette when the theme is dark.")
	must(trk.CommentOnWorkItem(ctx, engine.WriteOptions{}, dark, "ana", "Contrast of the menu text is unreadable too."))
	pages := n.Pages()
	must(pages.CreateSpace(ctx, engine.WriteOptions{}, "DOCS", "Docs"))
	must(pages.CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "Deploying a release", Body: "Ship a new version by tagging and rolling it out to every node."}))
	waitEmbedded(t, vs, semantic.WorkItem, 2)
	waitEmbedded(t, vs, semantic.Comment, 1)
	waitEmbedded(t, vs, semantic.Page, 1)

	// "sign-in" and "authentication" are not words of the item: bm25
	// alone (every word must match) finds nothing, the fused ranking does.
	res := must(trk.SearchWorkItems(ctx, engine.ReadOptions{}, "sign-in authentication failures", "", 5))
	if res.Ranking != tracker.RankingHybrid || res.Coverage == nil || res.Coverage.Embedded != 2 || res.Coverage.Total != 2 || res.Coverage.Ratio != 1 {
		t.Fatalf("ranking %q coverage %+v", res.Ranking, res.Coverage)
	}
	if len(res.Hits) == 0 || res.Hits[0].Key != sso || res.Hits[0].Similarity == nil || res.Hits[0].BM25 != nil {
		t.Fatalf("hybrid search for a paraphrase: %+v", res.Hits)
	}
	// A comment's vector finds its item.
	res = must(trk.SearchWorkItems(ctx, engine.ReadOptions{}, "menu text hard to read", "", 5))
	if len(res.Hits) == 0 || res.Hits[0].Key != dark {
		t.Fatalf("search by a comment's meaning: %+v", res.Hits)
	}
	sim := must(trk.SimilarWorkItems(ctx, engine.ReadOptions{}, tracker.SimilarQuery{Title: "SSO login broken", Description: "Sign-in through the identity provider fails."}))
	if sim.Ranking != tracker.RankingHybrid || len(sim.Hits) == 0 || sim.Hits[0].Key != sso || sim.Hits[0].Similarity == nil || *sim.Hits[0].Similarity < 0.3 {
		t.Fatalf("similar_work_items: %+v", sim)
	}
	byKey := must(trk.SimilarWorkItems(ctx, engine.ReadOptions{}, tracker.SimilarQuery{Key: sso}))
	for _, h := range byKey.Hits {
		if h.Key == sso {
			t.Fatalf("similar to %s answers itself: %+v", sso, byKey.Hits)
		}
	}
	kres := must(pages.SearchKnowledge(ctx, engine.ReadOptions{}, kb.SearchQuery{Query: "deployment rollout"}))
	if kres.Ranking != kb.RankingHybrid || len(kres.Hits) != 1 || kres.Hits[0].Similarity == nil || kres.Coverage.Embedded != 1 {
		t.Fatalf("search_knowledge by meaning: %+v", kres)
	}

	// An edit is embedded again: the row's hash moves.
	item := must(trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, sso))
	before, _, _ := row(t, n, item.Item.ID)
	title := "Users cannot sign in with SSO or passwords"
	must(trk.UpdateWorkItem(ctx, engine.WriteOptions{}, sso, 0, tracker.ItemPatch{Title: &title}))
	enginetest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if h, _, _ := row(t, n, item.Item.ID); h == before {
			return fmt.Errorf("the edited item is not embedded again")
		}
		return nil
	})

	// A purge forgets the item's vector.
	darkItem := must(trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, dark))
	if _, err := trk.PurgeWorkItem(ctx, engine.WriteOptions{}, dark); err != nil {
		t.Fatal(err)
	}
	waitEmbedded(t, vs, semantic.WorkItem, 1)
	waitEmbedded(t, vs, semantic.Comment, 0)
	if _, _, ok := row(t, n, darkItem.Item.ID); ok {
		t.Fatal("the purged item's vector row is still there")
	}
	last, err := n.Log(vecrec.Domain).LastOnSubject(ctx, vecrec.Subject(darkItem.Item.ID))
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := record.Decode(last.Data); err != nil || rec.Kind != vecrec.KindForget {
		t.Fatalf("the stream's message for the purged item is %v (%v), want its forget", rec, err)
	}
	res = must(trk.SearchWorkItems(ctx, engine.ReadOptions{}, "sidebar", "", 5))
	if len(res.Hits) != 0 || res.Coverage.Total != 1 {
		t.Fatalf("after the purge: %+v", res)
	}
}

// TestJoiningNodeReplaysCurrentValues: a node whose database is new (its
// data directory's store kept, so the same stream) replays each source's
// current value only: the stream holds one message per source, older
// values replaced, and the applier is handed exactly those (and whatever
// is appended after it joined).
func TestJoiningNodeReplaysCurrentValues(t *testing.T) {
	dir := t.TempDir()
	n, trk, vs := open(t, dir)
	must(trk.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"))
	key := create(t, trk, "Export fails for large reports", "The CSV export times out past 10 000 rows.")
	create(t, trk, "Invoice totals are rounded wrong", "")
	waitEmbedded(t, vs, semantic.WorkItem, 2)
	id := must(trk.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, key)).Item.ID
	// Each edit is waited for by the hash of its own text: a pass of the
	// duty that read the item before the edit lands a row of the older
	// text first, so a changed sequence alone does not say which.
	var hash string
	for i := range 3 {
		desc := fmt.Sprintf("Edit %d of the description.", i)
		must(trk.UpdateWorkItem(ctx, engine.WriteOptions{}, key, 0, tracker.ItemPatch{Description: &desc}))
		hash = vectors.TextHash(vs.Model(), semantic.Text("Export fails for large reports", desc))
		enginetest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			if h, _, _ := row(t, n, id); h != hash {
				return fmt.Errorf("edit %d not embedded yet", i)
			}
			return nil
		})
	}
	info, err := n.Log(vecrec.Domain).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	live := 0
	for seq := info.FirstSeq; seq <= info.LastSeq; seq++ {
		if _, err := n.Log(vecrec.Domain).Get(ctx, seq); err == nil {
			live++
		} else if !errors.Is(err, statelog.ErrNoMessage) {
			t.Fatal(err)
		}
	}
	if live != 2 || info.LastSeq < 5 {
		t.Fatalf("the stream holds %d messages through %d: want one a source (2) after at least 5 records", live, info.LastSeq)
	}
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, sqlite.FileName)); err != nil {
		t.Fatal(err)
	}
	n2, _, vs2 := open(t, dir)
	waitEmbedded(t, vs2, semantic.WorkItem, 2)
	// The joining node is handed the current values, then every record
	// appended since it joined (its own embedding duty may publish one
	// before it has replayed the stream): nothing older.
	enginetest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		now, err := n2.Log(vecrec.Domain).Info(ctx)
		if err != nil {
			return err
		}
		rep := n2.Replica(vecrec.Domain)
		want := uint64(live) + now.LastSeq - info.LastSeq
		if got := rep.Stats().Deliveries; rep.Applied() != now.LastSeq || got != want {
			return fmt.Errorf("the joining node was handed %d vectors records (applied %d of %d), want the %d current values and the %d appended since", got, rep.Applied(), now.LastSeq, live, now.LastSeq-info.LastSeq)
		}
		return nil
	})
	if h, _, ok := row(t, n2, id); !ok || h != hash {
		t.Errorf("the joining node's vector is %q (%v), want the current value %q", h, ok, hash)
	}
}
