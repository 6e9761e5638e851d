// Package rest is the REST read path, /api/v1/…: the routes the dashboard
// and scripts read from, answering the same JSON as the tools. A read here
// is stale by default and settable through the read grammar (read_level,
// min_position, max_lag_seq, max_lag_seconds); every other query key is
// the route's own and parsed as strictly. Refusals are the engine's codes
// as JSON with the code table's HTTP status. Authentication and origin
// checks are the mounting surface's (httpedge.Guard), not this package's. The
// routes are the services' own (ReadRouter: each domain's and the
// replication answer's), collected by RoutesOf: this package names no
// domain.
package rest
