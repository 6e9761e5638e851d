// Package node assembles one Crewlet node from a Config: the broker, the
// replicated SQLite store, the replication framework and the domains, and
// hands the surfaces their services. It is the only package that knows how
// the parts are wired together.
package node
