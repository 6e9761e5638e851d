package trackertools

import (
	"context"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// gestureCall is what the fake saw of a gesture call.
type gestureCall struct {
	key, other, body string
	keys             []string
	query            string
	limit            int
}

// The gestures and search of the fake: each records its arguments and
// answers the walk the test put in f.steps (with f.gestureErr as its
// error, if set).
func (f *fakeTracker) gesture(name string, w engine.WriteOptions, c gestureCall) (tracker.ItemWrite, error) {
	if err := f.record(name); err != nil {
		return tracker.ItemWrite{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastW, f.lastG = w, c
	res := tracker.ItemWrite{WriteResult: f.result(w.OpID), Steps: f.steps, OneSided: f.oneSided}
	if res.Outcome == engine.Applied {
		res.Item = &tracker.WorkItem{Key: c.key, Version: 44}
	} else if res.Outcome == engine.Unknown {
		res.Message = "Step move of ENG-2 (op s2) is unknown. Call again with op_id " + res.OpID + " and the same arguments."
	}
	return res, f.gestureErr
}

func (f *fakeTracker) CommentOnWorkItem(_ context.Context, w engine.WriteOptions, key, author, body string) (tracker.ItemWrite, error) {
	return f.gesture("CommentOnWorkItem", w, gestureCall{key: key, other: author, body: body})
}

func (f *fakeTracker) MoveWorkItem(_ context.Context, w engine.WriteOptions, key, to string) (tracker.ItemWrite, error) {
	return f.gesture("MoveWorkItem", w, gestureCall{key: key, other: to})
}

func (f *fakeTracker) MergeWorkItems(_ context.Context, w engine.WriteOptions, into string, duplicates []string) (tracker.ItemWrite, error) {
	return f.gesture("MergeWorkItems", w, gestureCall{key: into, keys: duplicates})
}

func (f *fakeTracker) TrashWorkItem(_ context.Context, w engine.WriteOptions, key string) (tracker.ItemWrite, error) {
	return f.gesture("TrashWorkItem", w, gestureCall{key: key})
}

func (f *fakeTracker) RestoreWorkItem(_ context.Context, w engine.WriteOptions, key string) (tracker.ItemWrite, error) {
	return f.gesture("RestoreWorkItem", w, gestureCall{key: key})
}

func (f *fakeTracker) PurgeWorkItem(_ context.Context, w engine.WriteOptions, key string) (tracker.PurgeResult, error) {
	if err := f.record("PurgeWorkItem"); err != nil {
		return tracker.PurgeResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastW, f.lastG = w, gestureCall{key: key}
	return tracker.PurgeResult{WriteResult: f.result(w.OpID), Key: key}, nil
}

func (f *fakeTracker) SearchWorkItems(_ context.Context, r engine.ReadOptions, query, project string, limit int) (tracker.SearchResult, error) {
	if err := f.record("SearchWorkItems"); err != nil {
		return tracker.SearchResult{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.lastR, f.lastG = r, gestureCall{query: query, other: project, limit: limit}
	return tracker.SearchResult{ReadInfo: f.info(), Hits: []tracker.SearchHit{{Key: "ENG-1", Title: "Fix the [login]", Status: "open", Snippet: "[login] page", Score: 3}}}, nil
}
