//go:build integration

package kb_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/kb"
)

// TestLifecycleOnACluster: on three nodes (one replicated pages log, each
// node its own SQLite file), lifecycle writes decided on different nodes
// — a comment on n1, its author's edit on n2 and another author's refused
// there, a trash on n3, a move across spaces on n1, an archive on n2 —
// leave every node with the very same rows.
func TestLifecycleOnACluster(t *testing.T) {
	c := fleettest.StartCluster(t, fleettest.Options{})
	n1, n2, n3 := c.Node(0).Pages(), c.Node(1).Pages(), c.Node(2).Pages()
	mustSpace(t, n1, "ENG")
	mustSpace(t, n1, "OPS")
	a := mustPage(t, n1, "ENG", "", "A", "")
	b := mustPage(t, n1, "ENG", a.ID, "B", "")
	mustPage(t, n1, "ENG", b.ID, "C", "")
	ana, bob := engine.WithActor(bg, "seat:ana"), engine.WithActor(bg, "seat:bob")
	w, err := n1.CommentOnPage(ana, engine.WriteOptions{}, kb.CommentEdit{Page: a.ID, Body: "first"})
	if err != nil {
		t.Fatal(err)
	}
	// n2 decides at linearizable rows: it has the comment by then.
	if _, err := n2.GetPage(bg, lin(), a.ID); err != nil {
		t.Fatal(err)
	}
	_, err = n2.CommentOnPage(bob, engine.WriteOptions{}, kb.CommentEdit{Page: a.ID, ID: w.Comment.ID, Body: "bob's"})
	refusedWith(t, err, engine.CodeInvalidArgument, "only its author")
	if _, err := n2.CommentOnPage(ana, engine.WriteOptions{}, kb.CommentEdit{Page: a.ID, ID: w.Comment.ID, Body: "second"}); err != nil {
		t.Fatal(err)
	}
	if _, err := n3.GetPage(bg, lin(), b.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := n3.UpdatePage(bg, engine.WriteOptions{}, b.ID, 0, kb.PagePatch{Trashed: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.GetPage(bg, lin(), a.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := n1.UpdatePage(bg, engine.WriteOptions{}, a.ID, 0, kb.PagePatch{Space: ptr("OPS")}); err != nil {
		t.Fatal(err)
	}
	if _, err := n2.UpdateSpace(bg, engine.WriteOptions{}, "ENG", 0, kb.SpacePatch{Archived: ptr(true)}); err != nil {
		t.Fatal(err)
	}
	last := lastSeq(t, c.Node(1))
	want := ""
	for i := range 3 {
		ctx, cancel := context.WithTimeout(bg, 30*time.Second)
		err := c.Node(i).Replica(engine.DomainPages).WaitApplied(ctx, last)
		cancel()
		if err != nil {
			t.Fatalf("n%d: %v", i+1, err)
		}
		got := lifeRows(t, c.Node(i))
		if i == 0 {
			want = got
			continue
		}
		if got != want {
			t.Fatalf("n%d's rows differ from n1's:\n%s\nn1:\n%s", i+1, got, want)
		}
	}
}
