package snapshot

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine/rest"
)

// ProgressPath is GET /api/v1/progress: this node's long work as it
// stands, for the dashboard's Settings › Backups & retention page.
const ProgressPath = "/api/v1/progress"

// Backup phases, in order.
const (
	PhaseCopying = "copying" // the pages are being copied out of the live database
	PhaseStoring = "storing" // the artefact is being put in the repository
	PhaseDone    = "done"    // the artefact is stored
	PhaseFailed  = "failed"  // the take or the put failed (Error says why)
)

// BackupProgress is how far one snapshot take has come: the one running,
// or the last one once it ended.
type BackupProgress struct {
	Running    bool       `json:"running"`
	Phase      string     `json:"phase"`
	StartedAt  time.Time  `json:"started_at"`
	EndedAt    *time.Time `json:"ended_at,omitempty"`
	DonePages  int64      `json:"done_pages"`
	TotalPages int64      `json:"total_pages"`
	Percent    int64      `json:"percent"`
	Name       string     `json:"name,omitempty"`
	Error      string     `json:"error,omitempty"`
}

// ProgressAnswer is GET /api/v1/progress's answer. It is read as the node
// holds it now: no read level applies.
type ProgressAnswer struct {
	Node    string    `json:"node"`
	AskedAt time.Time `json:"asked_at"`
	// Backup is the running snapshot take, or the last one; absent when
	// the node has taken none since it started.
	Backup *BackupProgress `json:"backup,omitempty"`
}

// Running follows a node's snapshot takes (one at a time: the node holds
// a lock around each) for ProgressPath. The zero value is ready; a nil
// *Running ignores every call.
type Running struct {
	Node string

	mu  sync.Mutex
	cur *BackupProgress
}

// Start records a take beginning at now.
func (r *Running) Start(now time.Time) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cur = &BackupProgress{Running: true, Phase: PhaseCopying, StartedAt: now}
}

// Step records the pages copied so far.
func (r *Running) Step(done, total int64) {
	r.update(func(b *BackupProgress) {
		b.DonePages, b.TotalPages, b.Percent = done, total, percent(done, total)
	})
}

// Storing records that the copy is whole and the artefact named name is
// being put in the repository.
func (r *Running) Storing(name string) {
	r.update(func(b *BackupProgress) { b.Phase, b.Name = PhaseStoring, name })
}

// End records the take's end at now: done, or failed with err.
func (r *Running) End(now time.Time, err error) {
	r.update(func(b *BackupProgress) {
		b.Running, b.EndedAt, b.Phase = false, &now, PhaseDone
		if err != nil {
			b.Phase, b.Error = PhaseFailed, err.Error()
		}
	})
}

func (r *Running) update(f func(*BackupProgress)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cur != nil {
		f(r.cur)
	}
}

// Answer is the route's answer at now.
func (r *Running) Answer(now time.Time) ProgressAnswer {
	a := ProgressAnswer{AskedAt: now}
	if r == nil {
		return a
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	a.Node = r.Node
	if r.cur != nil {
		b := *r.cur
		a.Backup = &b
	}
	return a
}

// Routes is GET ProgressPath.
func (r *Running) Routes() []rest.Route {
	return []rest.Route{{Method: http.MethodGet, Pattern: ProgressPath, Serve: func(ctx context.Context, _ *rest.Query) (any, error) {
		return r.Answer(time.Now().UTC()), nil
	}}}
}
