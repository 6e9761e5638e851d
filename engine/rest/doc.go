// Package rest is the one home of a node's HTTP API: the Route every
// package declares its routes in (a domain's service, the node's own, the
// surfaces' MCP endpoints and health checks), and Handler, which mounts
// them all one way, each behind the guard its Access names.
//
// A JSON route (Serve) is answered here: a GET is the read path, stale by
// default and settable through the read grammar (read_level,
// min_position, max_lag_seq, max_lag_seconds), every other query key the
// route's own and parsed as strictly; a POST with an OpID runs one write
// under the operation id ?op_id= brings back, digested as the MCP tool
// digests the same call. Refusals are the engine's codes as JSON with the
// code table's HTTP status. Authentication and origin checks are the HTTP
// edge's (httpedge.Guard), handed in through Config.Guard: this package
// names no domain and no surface.
package rest
