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

// Answer is the trail as this node holds it, newest gesture first. It is
// a replication answer (whether a purge or a gate landed): stale, each
// domain read through admission as a stale read is (an evicted node, one
// below the floor or on a log that is not its rows' refuses with that
// code), weakening to consistent_prefix where a domain's lag cannot be
// measured, with the lag of each domain's prefix and whether a record
// this node holds undecoded leaves the trail incomplete.
type Answer struct {
	Level engine.ReadLevel `json:"level"`
	// SeenThrough and Lag are each domain's, in the node's domain order.
	SeenThrough []engine.Position `json:"seen_through"`
	Lag         []*engine.Lag     `json:"lag"`
	Complete    bool              `json:"complete"`
	// Incomplete is each domain's incomplete block, where one is.
	Incomplete []*engine.Incomplete  `json:"incomplete,omitempty"`
	Note       string                `json:"note,omitempty"`
	Entries    []statelog.AuditEntry `json:"entries"`
}

// List reads at most limit entries, newest first.
func (t *Trail) List(ctx context.Context, limit int) (Answer, error) {
	a := Answer{Level: engine.Stale, SeenThrough: []engine.Position{}, Lag: []*engine.Lag{}, Complete: true}
	streams := map[engine.Domain]string{}
	// Each domain's prefix is admitted and measured before the rows are
	// read: the trail holds at least what they name.
	for _, r := range t.Replicas {
		streams[r.Domain()] = r.Stream()
		info, err := r.Read(ctx, engine.ReadOptions{Level: engine.Stale}, func(context.Context, *sql.Tx) error { return nil })
		if err != nil {
			return Answer{}, err
		}
		a.SeenThrough = append(a.SeenThrough, info.SeenThrough)
		a.Lag = append(a.Lag, info.Lag)
		if !info.Complete {
			a.Complete = false
			a.Incomplete = append(a.Incomplete, info.Incomplete)
		}
		if info.Lag == nil || info.Lag.Seconds == nil {
			a.Level = engine.ConsistentPrefix
			a.Note = "The lag behind " + r.Stream() + " cannot be measured from this node now, so the trail is answered as a prefix of the log with no age claimed."
		}
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
