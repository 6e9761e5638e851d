package trackertools

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// fakeTracker is a small in-memory Tracker for the surface tests: enough
// behaviour to check parsing, rendering and what reaches the service.
type fakeTracker struct {
	mu       sync.Mutex
	calls    []string
	lastW    engine.WriteOptions
	lastR    engine.ReadOptions
	lastNew  tracker.NewWorkItem
	lastF    tracker.ListFilter
	lastP    tracker.ItemPatch
	ifMatch  uint64
	outcome  engine.Outcome
	message  string // the service's sentence on a pending or unknown write
	fail     error
	projects map[string]tracker.Project
	// Gestures (fake_more_test.go).
	lastG      gestureCall
	steps      []tracker.Step
	oneSided   []string
	gestureErr error
}

var fakePos = engine.Position{Stream: engine.StreamTracker, Generation: 1, Seq: 42}

func (f *fakeTracker) record(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, name)
	return f.fail
}

func (f *fakeTracker) result(opID string) engine.WriteResult {
	if opID == "" {
		opID = "01938c2e-5f1a-7b3c-9d4e-0a1b2c3d4e5f.x"
	}
	out := f.outcome
	if out == "" {
		out = engine.Applied
	}
	w := engine.WriteResult{OpID: opID, Outcome: out, Message: f.message}
	switch out {
	case engine.Applied:
		w.Position = fakePos.Token()
	case engine.Pending:
		w.Position = fakePos.Token()
		w.Lag = &engine.Lag{Seq: 3}
	}
	return w
}

func (f *fakeTracker) info() engine.ReadInfo {
	return engine.ReadInfo{Level: engine.Linearizable, SeenThrough: fakePos, Complete: true}
}

func (f *fakeTracker) CreateProject(_ context.Context, w engine.WriteOptions, key, name string) (tracker.ProjectWrite, error) {
	if err := f.record("CreateProject"); err != nil {
		return tracker.ProjectWrite{}, err
	}
	f.lastW = w
	return tracker.ProjectWrite{WriteResult: f.result(w.OpID), Project: &tracker.Project{Key: key, Name: name, Version: 42}}, nil
}

func (f *fakeTracker) ListProjects(_ context.Context, r engine.ReadOptions) (tracker.ProjectList, error) {
	if err := f.record("ListProjects"); err != nil {
		return tracker.ProjectList{}, err
	}
	f.lastR = r
	return tracker.ProjectList{ReadInfo: f.info(), Projects: []tracker.Project{{Key: "ENG", Name: "Engineering"}}}, nil
}

func (f *fakeTracker) CreateWorkItem(_ context.Context, w engine.WriteOptions, in tracker.NewWorkItem) (tracker.ItemWrite, error) {
	if err := f.record("CreateWorkItem"); err != nil {
		return tracker.ItemWrite{}, err
	}
	f.lastW, f.lastNew = w, in
	if in.Project != "ENG" {
		return tracker.ItemWrite{}, engine.Refuse(engine.CodeNotFound, "There is no project %s. List projects with list_projects.", in.Project)
	}
	return tracker.ItemWrite{WriteResult: f.result(w.OpID), Item: &tracker.WorkItem{Key: "ENG-1", Project: "ENG", Number: 1, Title: in.Title, Status: "open", Version: 42, CreatedAt: time.Unix(0, 0).UTC()}}, nil
}

func (f *fakeTracker) GetWorkItem(_ context.Context, r engine.ReadOptions, key string) (tracker.ItemRead, error) {
	if err := f.record("GetWorkItem"); err != nil {
		return tracker.ItemRead{}, err
	}
	f.lastR = r
	return tracker.ItemRead{ReadInfo: f.info(), Item: tracker.WorkItem{Key: key, Title: "t", Status: "open", Version: 42}}, nil
}

func (f *fakeTracker) ListWorkItems(_ context.Context, r engine.ReadOptions, fl tracker.ListFilter) (tracker.ItemList, error) {
	if err := f.record("ListWorkItems"); err != nil {
		return tracker.ItemList{}, err
	}
	f.lastR, f.lastF = r, fl
	return tracker.ItemList{ReadInfo: f.info(), NextCursor: "c2"}, nil
}

func (f *fakeTracker) UpdateWorkItem(_ context.Context, w engine.WriteOptions, key string, ifMatch uint64, p tracker.ItemPatch) (tracker.ItemWrite, error) {
	if err := f.record("UpdateWorkItem"); err != nil {
		return tracker.ItemWrite{}, err
	}
	f.lastW, f.ifMatch, f.lastP = w, ifMatch, p
	return tracker.ItemWrite{WriteResult: f.result(w.OpID), Item: &tracker.WorkItem{Key: key, Version: 43}, Steps: f.steps, OneSided: f.oneSided}, nil
}

var errSecret = errors.New("sqlite: disk I/O error at /secret/path")
