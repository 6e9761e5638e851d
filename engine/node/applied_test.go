package node_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestOnAppliedTellsEachCommitsScopes: the post-commit seam tells the
// scopes of what each domain's applier applied, once committed (a read
// right after the call sees the rows), and tells nothing once stopped.
func TestOnAppliedTellsEachCommitsScopes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := open(t, t.TempDir())
	defer n.Close()
	var mu sync.Mutex
	var told []string
	checked := make(chan error, 16)
	stop := n.OnApplied(func(scopes []string) {
		mu.Lock()
		told = append(told, scopes...)
		mu.Unlock()
		if slices.Contains(scopes, "project:ENG") {
			// Told after the commit: the project is there to read.
			_, err := n.Tracker().ListProjects(ctx, engine.ReadOptions{Level: engine.Stale})
			checked <- err
		}
	})
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "One"})
	if err != nil || w.Outcome != engine.Applied {
		t.Fatalf("create item: %+v %v", w, err)
	}
	if _, err := n.Pages().CreateSpace(ctx, engine.WriteOptions{}, "DOCS", "Docs"); err != nil {
		t.Fatal(err)
	}
	// Every write above answered applied: its commit, and so its call,
	// came before the answer.
	mu.Lock()
	got := slices.Clone(told)
	mu.Unlock()
	for _, want := range []string{"project:ENG", "item:" + w.Item.ID, "space:DOCS"} {
		if !slices.Contains(got, want) {
			t.Errorf("told %v, want %s among them", got, want)
		}
	}
	select {
	case err := <-checked:
		if err != nil {
			t.Errorf("read from the seam: %v", err)
		}
	default:
		t.Error("the seam never saw project:ENG")
	}
	stop()
	if _, err := n.Pages().CreatePage(ctx, engine.WriteOptions{}, kb.NewPage{Space: "DOCS", Title: "After"}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(told) != len(got) {
		t.Errorf("told %v after stop", told[len(got):])
	}
}
