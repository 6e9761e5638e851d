// Package httpedge is what every HTTP route of a node shares before any
// route sees a request: the server's timeouts, a cap on open connections,
// a cap on request bodies, write deadlines that move with a stream's
// progress, the readiness answer (/readyz) and the operator guard (Guard:
// the bearer token, and the Host and Origin names the node is reached
// by). It owns the http.* block of the config (Config): its rules, its
// defaults, and the Host names the guard admits. WithProfiles puts Go's
// runtime profiles behind that guard, for crewlet serve --pprof.
//
// The edge answers before the routes, and before the operator guard: a
// body larger than the cap is refused whatever the caller's token, and
// nothing here reads a body the route does not read, so a caller without
// a token is refused by the guard without its body being waited for.
// Its own refusal (too_large) is, like the guard's unauthorized and
// forbidden, about the request rather than a read or a write, so it is
// not in the engine's code table; it answers the same JSON object,
// {"refused": "...", "message": "..."}.
package httpedge
