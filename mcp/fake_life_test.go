package mcp

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// The fake's lifecycle half, so the surface tests see the catalogue a real
// node offers: each answers on the item or project named, as the rest of
// the fake does. The lifecycle's behaviour is tested on a real node
// (tracker_life_node_test.go).

func (f *fakeTracker) Comment(_ context.Context, w engine.WriteOptions, in tracker.CommentInput) (tracker.CommentWrite, error) {
	g, err := f.gesture(w, in.Key)
	return tracker.CommentWrite{WriteResult: g.WriteResult}, err
}

func (f *fakeTracker) ListItemHistory(_ context.Context, _ engine.ReadOptions, key, _ string, _ int) (tracker.HistoryPage, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.HistoryPage{ReadInfo: f.info(), Key: key, Changes: []tracker.Entry{}}, nil
}

func (f *fakeTracker) ListComments(_ context.Context, _ engine.ReadOptions, key, _ string, _ int) (tracker.CommentPage, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.CommentPage{ReadInfo: f.info(), Key: key, Comments: []tracker.Comment{}}, nil
}

func (f *fakeTracker) GetProject(_ context.Context, _ engine.ReadOptions, key string) (tracker.ProjectRead, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ProjectRead{ReadInfo: f.info(), Project: tracker.Project{Key: key}, Counts: map[string]int64{}}, nil
}

func (f *fakeTracker) ListProjectsIn(ctx context.Context, r engine.ReadOptions, _ bool) (tracker.ProjectList, error) {
	return f.ListProjects(ctx, r)
}

func (f *fakeTracker) UpdateProject(_ context.Context, w engine.WriteOptions, key string, _ *string, _ *bool) (tracker.ProjectWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ProjectWrite{WriteResult: f.wr(w), Project: &tracker.Project{Key: key, Version: f.seq}}, nil
}

func (f *fakeTracker) EmptyTrash(_ context.Context, w engine.WriteOptions, _ string) (tracker.ItemWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ItemWrite{WriteResult: f.wr(w)}, nil
}

func (f *fakeTracker) BulkUpdateWhere(_ context.Context, w engine.WriteOptions, _ string, _ []string, _ tracker.BulkFilter, _ tracker.BulkPatch) (tracker.ItemWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ItemWrite{WriteResult: f.wr(w)}, nil
}

func (f *fakeTracker) BulkCreate(_ context.Context, w engine.WriteOptions, _ string, _ []tracker.NewWorkItem) (tracker.ItemWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ItemWrite{WriteResult: f.wr(w)}, nil
}
