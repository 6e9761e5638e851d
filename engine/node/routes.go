package node

import (
	"context"
	"net/http"
	"net/url"
	"strconv"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/snapshot"
)

// Routes are the node's own HTTP routes, which follow its domains'
// (Services): the replication answer, the audit trail, the snapshots and
// the progress of long work; then the operator's writes: a backup and a
// verify-restore, the node gates, a log's reanchor and a log's ceiling.
func (n *Node) Routes() []rest.Route {
	out := rest.RoutesOf(n.Retention(), n.Audit(), snapshot.Listing{Repo: n.SnapshotRepository()}, n.BackupProgress())
	out = append(out, snapshot.Routes(n, n.cfg.Logger)...)
	out = append(out, fleet.GateRoutes(n.NodeGates())...)
	out = append(out, rest.Route{Method: http.MethodPost, Pattern: "/api/v1/logs/{log}/reanchor", Unchecked: true, Serve: n.reanchorRoute})
	return append(out, rest.Route{Method: http.MethodPost, Pattern: "/api/v1/logs/{log}/capacity", Unchecked: true, Serve: n.capacityRoute})
}

// capacityRoute is POST /api/v1/logs/{log}/capacity?max_bytes=N
// (capacity.Path), the query its own.
func (n *Node) capacityRoute(ctx context.Context, q *rest.Query) (any, error) {
	max, err := maxBytesQuery(q.Raw())
	if err != nil {
		return nil, err
	}
	return n.SetCapacity(ctx, q.Path("log"), max)
}

// maxBytesQuery reads ?max_bytes= (the only key the route takes).
func maxBytesQuery(raw string) (int64, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return 0, engine.Refuse(engine.CodeInvalidArgument, "the query string is malformed: %v", err)
	}
	for k := range q {
		if k != "max_bytes" {
			return 0, engine.Refuse(engine.CodeInvalidArgument, "unknown query parameter %q: this route takes max_bytes only.", k)
		}
	}
	n, err := strconv.ParseInt(q.Get("max_bytes"), 10, 64)
	if err != nil || n <= 0 || len(q["max_bytes"]) != 1 {
		return 0, engine.Refuse(engine.CodeInvalidArgument, "max_bytes must be one positive whole number of bytes (got %q).", q.Get("max_bytes"))
	}
	return n, nil
}
