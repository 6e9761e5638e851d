package trackertools

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// The fake's search pages and tags (tracker-items).

func (f *fakeTracker) SearchWorkItemsPage(ctx context.Context, r engine.ReadOptions, q tracker.SearchQuery) (tracker.SearchResult, error) {
	return f.SearchWorkItems(ctx, r, q.Query, q.Project, q.Limit)
}

func (f *fakeTracker) ListTags(_ context.Context, r engine.ReadOptions, project string) (tracker.TagList, error) {
	if err := f.record("ListTags"); err != nil {
		return tracker.TagList{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastR, f.lastG = r, gestureCall{other: project}
	return tracker.TagList{ReadInfo: f.info(), Tags: []tracker.TagCount{{Tag: "ui", Count: 2}}}, nil
}
