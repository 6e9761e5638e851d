// Package trim is the log's retention: it computes each log's trim floor
// from its three terms and removes what is below it.
//
// The terms, each the highest sequence it lets the trim remove:
//
//   - node: the lowest position any data node in the positions register
//     stands at. Every live data node is in the register from the moment
//     it starts, at zero until its first beat, so the trim never removes a
//     record a node that may still write has not applied. A node evicted
//     on the log no longer counts (the eviction gate drops its writes).
//   - age: the newest record older than the age floor (MinAge, default 30
//     days, the operation ledger's own sweep: a record is on the log at
//     least as long as a ledger row may still answer for it).
//   - backup: the highest checkpoint a stored snapshot covers. Below the
//     floor each node's own database is the only copy of that history,
//     so the trim never passes what a backup reached.
//
// The floor is the lowest of the three and never moves back. It is
// published in the CREWLET_TRIM_FLOORS bucket (engine/fleet) with the
// term that holds it and what holds it, before the broker's purge runs.
//
// One node of the fleet trims each log: the node whose broker leads the
// log's stream, where that is a node in the register (the purge is
// carried out by the leader anyway, and a leader change hands the job
// on), else the lowest-named node in the register. Two nodes trimming at
// once do no harm: the purge through a sequence already purged removes
// nothing, and the floor is published by compare-and-set, never lowered.
package trim
