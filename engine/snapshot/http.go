package snapshot

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/rest"
)

// The operator routes of the snapshotter, beside /api/v1/retention.
const (
	BackupPath        = "/api/v1/retention/backup"
	VerifyRestorePath = "/api/v1/retention/verify-restore"
)

// Operator is what the routes run: a node's backup and verify-restore.
type Operator interface {
	Backup(ctx context.Context, progress Progress) (Manifest, error)
	VerifyRestore(ctx context.Context) (Report, error)
}

// BackupLine is one line of the backup route's answer, which is a stream
// of JSON lines (application/x-ndjson): progress lines while the copy
// runs, then one line with the manifest or the refusal.
type BackupLine struct {
	Progress *ProgressLine `json:"progress,omitempty"`
	Snapshot *Manifest     `json:"snapshot,omitempty"`
	// Error is a refusal, as the node's other routes answer one.
	Error json.RawMessage `json:"error,omitempty"`
}

// ProgressLine is how far the copy has come, in pages.
type ProgressLine struct {
	DonePages  int64 `json:"done_pages"`
	TotalPages int64 `json:"total_pages"`
	Percent    int64 `json:"percent"`
}

// progressEvery is how often the backup route writes a progress line.
const progressEvery = time.Second

// Routes are the snapshotter's operator routes: POST BackupPath takes a
// snapshot into the node's repository, streaming its progress; POST
// VerifyRestorePath answers a Report. Neither reads its query.
func Routes(op Operator, log *slog.Logger) []rest.Route {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(engine.LogComponent, engine.ComponentHTTP)
	return []rest.Route{
		{Method: http.MethodPost, Pattern: BackupPath, Handler: backupHandler(op, log)},
		{Method: http.MethodPost, Pattern: VerifyRestorePath, Unchecked: true, Serve: func(ctx context.Context, _ *rest.Query) (any, error) {
			rep, err := op.VerifyRestore(ctx)
			if err != nil {
				return nil, refusalOf(ctx, VerifyRestorePath, log, err)
			}
			return rep, nil
		}},
	}
}

// backupHandler answers BackupPath with a line of progress at least every
// progressEvery while the copy runs, then the manifest or the refusal.
func backupHandler(op Operator, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.Header().Set("Cache-Control", "no-store")
		var mu sync.Mutex
		enc := json.NewEncoder(w)
		send := func(l BackupLine) {
			mu.Lock()
			defer mu.Unlock()
			enc.Encode(l)
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
		}
		last := time.Time{}
		m, err := op.Backup(r.Context(), func(done, total int64) {
			if now := time.Now(); now.Sub(last) >= progressEvery || done == total {
				last = now
				send(BackupLine{Progress: &ProgressLine{DonePages: done, TotalPages: total, Percent: percent(done, total)}})
			}
		})
		if err != nil {
			data, _ := json.Marshal(refusalOf(r.Context(), r.URL.Path, log, err).Object())
			send(BackupLine{Error: data})
			return
		}
		send(BackupLine{Snapshot: &m})
	})
}

// refusalOf words err for the caller: a refusal as it is, a corrupt
// artefact as its refusal, anything else internal (and logged).
func refusalOf(ctx context.Context, path string, log *slog.Logger, err error) *engine.Refusal {
	if ref, ok := engine.AsRefusal(err); ok {
		return ref
	}
	var ce *CorruptError
	if errors.As(err, &ce) {
		return ce.Refusal()
	}
	log.ErrorContext(ctx, "http_internal_error", "path", path, engine.LogErr, err.Error())
	return engine.Refuse(engine.CodeInternal, "the snapshot failed on the node: %v. Its log says more; try again.", err)
}

func percent(done, total int64) int64 {
	if total <= 0 {
		return 100
	}
	return done * 100 / total
}
