package kb_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// lifeRows renders every lifecycle row a node holds, in a fixed order.
func lifeRows(t *testing.T, n *node.Node) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id || space || parent || title || body || version || scoped_through FROM kb_pages ORDER BY n`,
		`SELECT key || seq FROM kb_archived ORDER BY key`,
		`SELECT id || seq FROM kb_trash ORDER BY id`,
		`SELECT id || seq || kind || actor || at || space || parent || title || body || trashed FROM kb_versions ORDER BY id, seq`,
		`SELECT id || page || author || body || version FROM kb_comments ORDER BY id`,
	} {
		rows, err := n.DB().Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, s)
		}
		rows.Close()
	}
	return b.String()
}

// TestLifecycleAppliesFromRowsAlone: the apply decides every lifecycle
// rule from its rows, so records decided elsewhere cannot break them (an
// edit of another author's comment, a restore under a trashed parent, a
// kind this build does not know: none is taken), and a node rebuilt from
// the log reaches the very same rows.
func TestLifecycleAppliesFromRowsAlone(t *testing.T) {
	dir := t.TempDir()
	n, svc := openNode(t, node.Config{DataDir: dir})
	mustSpace(t, svc, "ENG")
	mustSpace(t, svc, "OPS")
	a := mustPage(t, svc, "ENG", "", "A", "")
	b := mustPage(t, svc, "ENG", a.ID, "B", "")
	mustPage(t, svc, "ENG", b.ID, "C", "")
	w, err := svc.CommentOnPage(engine.WithActor(bg, "seat:ana"), engine.WriteOptions{}, kb.CommentEdit{Page: a.ID, Body: "mine"})
	if err != nil {
		t.Fatal(err)
	}
	mustPatch(t, svc, b.ID, kb.PagePatch{Trashed: ptr(true)})
	mustPatch(t, svc, a.ID, kb.PagePatch{Trashed: ptr(true)})
	// Decided elsewhere against other rows: bob edits ana's comment, and
	// b is restored while a (its parent) is in the trash.
	cid := w.Comment.ID
	publishRaw(t, n, "n9", kb.KindComment, "crewlet.pages.comment."+cid, []string{"space:ENG", "page:" + a.ID},
		map[string]any{"id": cid, "page": a.ID, "author": "seat:bob", "body": "bob's now"})
	publishRaw(t, n, "n9", kb.KindTrashPage, pageSubject(b.ID), []string{"space:ENG", "page:" + b.ID}, map[string]any{"id": b.ID, "trashed": false})
	publishRaw(t, n, "n9", "pages.from_the_future", pageSubject(a.ID), []string{"page:" + a.ID}, map[string]any{"id": a.ID})
	if c := count(t, n, `SELECT count(*) FROM kb_comments WHERE body = 'mine'`); c != 1 {
		t.Fatal("another author's edit was taken")
	}
	if !mustGet(t, svc, b.ID).Trashed {
		t.Fatal("a restore under a trashed parent was taken")
	}
	mustPatch(t, svc, a.ID, kb.PagePatch{Trashed: ptr(false)})
	mustPatch(t, svc, a.ID, kb.PagePatch{Space: ptr("OPS")})
	if _, err := svc.UpdateSpace(bg, engine.WriteOptions{}, "ENG", 0, kb.SpacePatch{Archived: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	last := lastSeq(t, n)
	want := lifeRows(t, n)
	n.Close()
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, sqlite.FileName+suffix)); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	n2, _ := openNode(t, node.Config{DataDir: dir})
	waitApplied(t, n2, last)
	if got := lifeRows(t, n2); got != want {
		t.Fatalf("rebuilt rows differ:\n%s\nwant:\n%s", got, want)
	}
}
