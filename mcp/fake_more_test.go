package mcp

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// The fake's gestures and search: each answers applied on the item named.

func (f *fakeTracker) gesture(w engine.WriteOptions, key string) (tracker.ItemWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	it, ok := f.items[key]
	if !ok {
		return tracker.ItemWrite{}, engine.Refuse(engine.CodeNotFound, "There is no work item %s.", key)
	}
	return tracker.ItemWrite{WriteResult: f.wr(w), Item: &it}, nil
}

func (f *fakeTracker) CommentOnWorkItem(_ context.Context, w engine.WriteOptions, key, _, _ string) (tracker.ItemWrite, error) {
	return f.gesture(w, key)
}

func (f *fakeTracker) MoveWorkItem(_ context.Context, w engine.WriteOptions, key, _ string) (tracker.ItemWrite, error) {
	return f.gesture(w, key)
}

func (f *fakeTracker) MergeWorkItems(_ context.Context, w engine.WriteOptions, into string, _ []string) (tracker.ItemWrite, error) {
	return f.gesture(w, into)
}

func (f *fakeTracker) TrashWorkItem(_ context.Context, w engine.WriteOptions, key string) (tracker.ItemWrite, error) {
	return f.gesture(w, key)
}

func (f *fakeTracker) RestoreWorkItem(_ context.Context, w engine.WriteOptions, key string) (tracker.ItemWrite, error) {
	return f.gesture(w, key)
}

func (f *fakeTracker) PurgeWorkItem(_ context.Context, w engine.WriteOptions, key string) (tracker.PurgeResult, error) {
	f.begin()
	defer f.mu.Unlock()
	delete(f.items, key)
	return tracker.PurgeResult{WriteResult: f.wr(w), Key: key}, nil
}

func (f *fakeTracker) SearchWorkItems(_ context.Context, _ engine.ReadOptions, _, _ string, _ int) (tracker.SearchResult, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.SearchResult{ReadInfo: f.info(), Hits: []tracker.SearchHit{}}, nil
}
