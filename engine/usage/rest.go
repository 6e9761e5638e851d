package usage

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine/rest"
)

// Routes is GET /api/v1/usage?from=&to=&seat=&tool=&node=, the read
// path's answer of usage_report, at the replication answers' level
// (no read_level: it is derived, not chosen).
func (s *Service) Routes() []rest.Route {
	return []rest.Route{{Method: http.MethodGet, Pattern: "/api/v1/usage", Keys: []string{"from", "to", "seat", "tool", "node"},
		Serve: func(ctx context.Context, q *rest.Query) (any, error) {
			return s.Usage(ctx, Query{From: q.Str("from"), To: q.Str("to"), Seat: q.Str("seat"), Tool: q.Str("tool"), Node: q.Str("node")})
		}}}
}
