package mcp

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// The fake's search pages and tags (tracker-items).

func (f *fakeTracker) SearchWorkItemsPage(ctx context.Context, r engine.ReadOptions, q tracker.SearchQuery) (tracker.SearchResult, error) {
	return f.SearchWorkItems(ctx, r, q.Query, q.Project, q.Limit)
}

func (f *fakeTracker) ListTags(_ context.Context, _ engine.ReadOptions, _ string) (tracker.TagList, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.TagList{ReadInfo: f.info(), Tags: []tracker.TagCount{}}, nil
}

// SimilarWorkItems answers no candidate, ranked by words (the fake holds
// no vectors), as the search above does.
func (f *fakeTracker) SimilarWorkItems(_ context.Context, _ engine.ReadOptions, _ tracker.SimilarQuery) (tracker.SimilarResult, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.SimilarResult{ReadInfo: f.info(), Hits: []tracker.SimilarHit{}, Ranking: tracker.RankingBM25}, nil
}
