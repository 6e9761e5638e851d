package mcp

import (
	"context"
	"sync"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// fakeTracker is a minimal in-memory Tracker for the surface tests.
type fakeTracker struct {
	mu     sync.Mutex
	calls  int
	panics bool
	items  map[string]tracker.WorkItem
	seq    uint64
}

func newFake() *fakeTracker { return &fakeTracker{items: map[string]tracker.WorkItem{}} }

func (f *fakeTracker) begin() {
	f.mu.Lock()
	f.calls++
	f.seq++
	if f.panics {
		f.mu.Unlock()
		panic("boom: internal detail")
	}
}

func (f *fakeTracker) pos() engine.Position {
	return engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: f.seq}
}

func (f *fakeTracker) wr(w engine.WriteOptions) engine.WriteResult {
	id := w.OpID
	if id == "" {
		id = "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.op"
	}
	return engine.WriteResult{OpID: id, Outcome: engine.Applied, Position: f.pos().Token()}
}

func (f *fakeTracker) info() engine.ReadInfo {
	return engine.ReadInfo{Level: engine.Linearizable, SeenThrough: f.pos(), Complete: true}
}

func (f *fakeTracker) CreateProject(_ context.Context, w engine.WriteOptions, key, name string) (tracker.ProjectWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ProjectWrite{WriteResult: f.wr(w), Project: &tracker.Project{Key: key, Name: name, Version: f.seq}}, nil
}

func (f *fakeTracker) ListProjects(_ context.Context, _ engine.ReadOptions) (tracker.ProjectList, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ProjectList{ReadInfo: f.info(), Projects: []tracker.Project{{Key: "ENG", Name: "Engineering"}}}, nil
}

func (f *fakeTracker) CreateWorkItem(_ context.Context, w engine.WriteOptions, in tracker.NewWorkItem) (tracker.ItemWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	if in.Project != "ENG" {
		return tracker.ItemWrite{}, engine.Refuse(engine.CodeNotFound, "There is no project %s. List projects with list_projects.", in.Project)
	}
	it := tracker.WorkItem{Key: "ENG-1", Project: "ENG", Number: 1, Title: in.Title, Status: "open", Version: f.seq}
	f.items[it.Key] = it
	return tracker.ItemWrite{WriteResult: f.wr(w), Item: &it}, nil
}

func (f *fakeTracker) GetWorkItem(_ context.Context, _ engine.ReadOptions, key string) (tracker.ItemRead, error) {
	f.begin()
	defer f.mu.Unlock()
	it, ok := f.items[key]
	if !ok {
		return tracker.ItemRead{}, engine.Refuse(engine.CodeNotFound, "There is no work item %s.", key)
	}
	return tracker.ItemRead{ReadInfo: f.info(), Item: it}, nil
}

func (f *fakeTracker) ListWorkItems(_ context.Context, _ engine.ReadOptions, _ tracker.ListFilter) (tracker.ItemList, error) {
	f.begin()
	defer f.mu.Unlock()
	return tracker.ItemList{ReadInfo: f.info(), Items: []tracker.WorkItem{}}, nil
}

func (f *fakeTracker) UpdateWorkItem(_ context.Context, w engine.WriteOptions, key string, ifMatch uint64, p tracker.ItemPatch) (tracker.ItemWrite, error) {
	f.begin()
	defer f.mu.Unlock()
	it, ok := f.items[key]
	if !ok {
		return tracker.ItemWrite{}, engine.Refuse(engine.CodeNotFound, "There is no work item %s.", key)
	}
	if it.Version != ifMatch {
		return tracker.ItemWrite{}, engine.Refuse(engine.CodeStale, "%s is at version %d, not %d. Read it again and decide against its current version.", key, it.Version, ifMatch).With("current_version", it.Version)
	}
	if p.Title != nil {
		it.Title = *p.Title
	}
	it.Version = f.seq
	f.items[key] = it
	return tracker.ItemWrite{WriteResult: f.wr(w), Item: &it}, nil
}
