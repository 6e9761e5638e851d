// Package node assembles one Crewlet node from a Config: the broker, the
// replicated SQLite store, the replication framework and the domains, and
// hands the surfaces their services. It is the only package that knows how
// the parts are wired together, so the node-wide duties that need several
// parts at once live here as wiring, each in its own file, their logic in
// the package named beside it: the logs' ceilings sized at boot and
// changed by set-capacity (capacity.go, setcapacity.go: engine/capacity,
// engine/broker), the snapshot schedule, donor and adoption at boot
// (snapshots.go: engine/snapshot), the trim (node.go: engine/trim), what a
// metrics scrape reads (observe.go: engine/metrics) and the applier's
// post-commit seam for subscriptions (applied.go).
package node
