// Package audit serves the operator's audit trail: every purge, eviction
// and readmission, with who asked, when, what, its op_id and its
// position, over GET /api/v1/audit. The trail itself is derived by each
// node's applier from the records those gestures are (statelog's
// statelog_audit), so every node answers the same trail for the prefix
// it has applied; this package only reads it.
package audit

import (
	"context"
	"database/sql"
	"net/http"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// DefaultLimit and MaxLimit bound the entries one answer lists.
const (
	DefaultLimit = 100
	MaxLimit     = 1000
)

// Trail reads the audit trail from a node's replicated database.
type Trail struct {
	DB       *sql.DB
	Replicas []*statelog.Replica
}

// Answer is the trail as this node holds it: at stale, through the
// positions its replicas have applied (seen_through, one a domain), the
// newest gesture first.
type Answer struct {
	Level       engine.ReadLevel      `json:"level"`
	SeenThrough []engine.Position     `json:"seen_through"`
	Entries     []statelog.AuditEntry `json:"entries"`
}

// List reads at most limit entries, newest first.
func (t *Trail) List(ctx context.Context, limit int) (Answer, error) {
	a := Answer{Level: engine.Stale, SeenThrough: []engine.Position{}}
	streams := map[engine.Domain]string{}
	// The positions are read before the rows: the trail holds at least
	// what they name.
	for _, r := range t.Replicas {
		streams[r.Domain()] = r.Stream()
		a.SeenThrough = append(a.SeenThrough, r.Position(r.Applied()))
	}
	var err error
	a.Entries, err = statelog.ListAudit(ctx, t.DB, streams, limit)
	return a, err
}

// Routes is GET /api/v1/audit?limit=N.
func (t *Trail) Routes() []rest.Route {
	return []rest.Route{{Method: http.MethodGet, Pattern: "/api/v1/audit", Keys: []string{"limit"}, Serve: func(ctx context.Context, q *rest.Query) (any, error) {
		limit, err := q.Int("limit", 1, MaxLimit, DefaultLimit)
		if err != nil {
			return nil, err
		}
		return t.List(ctx, limit)
	}}}
}
