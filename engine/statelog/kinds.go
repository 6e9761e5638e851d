package statelog

import (
	"fmt"

	"github.com/crewlet/crewlet/engine/record"
)

// frameworkKinds are the records the framework itself writes and applies
// on every domain's log, each with the lowest format version that applies
// it whole (Replication › Which records an upgrade holds back). A barrier
// and a node gate stay at version 1 for good: an older node retaining a
// barrier would hold a deferral for every linearizable read, and one
// retaining an eviction would go on applying what the evicted node
// appends.
var frameworkKinds = map[string]int{
	record.KindBarrier: 1,
	KindEvict:          1,
	KindReadmit:        1,
	KindCapacity:       3,
	KindGeneration:     1,
}

// frameworkGateKinds are the framework's records that install a gate: a
// build that cannot decode one stops its applier rather than retain it.
var frameworkGateKinds = []string{KindEvict, KindReadmit, KindGeneration}

// FrameworkKinds lists the framework's record kinds and their versions
// (the upgrade tests enumerate every kind a build writes).
func FrameworkKinds() map[string]int {
	out := make(map[string]int, len(frameworkKinds))
	for k, v := range frameworkKinds {
		out[k] = v
	}
	return out
}

// kindVersion is the lowest format version that applies kind, from the
// framework's table or the domain's; known is false for a kind neither
// lists.
func (r *Replica) kindVersion(kind string) (v int, known bool) {
	if v, ok := frameworkKinds[kind]; ok {
		return v, true
	}
	v, ok := r.kinds[kind]
	return v, ok
}

// stamp is the format version a proposal's record is written at: the
// lowest that applies its kind, raised by what the proposal carries
// (a field a later format added). A kind this build does not list is a
// bug of the domain's, refused before anything is written: an older
// build would not know it either, and could only apply nothing for it.
func (r *Replica) stamp(prop *Proposal) (int, error) {
	v, ok := r.kindVersion(prop.Kind)
	if !ok {
		return 0, fmt.Errorf("statelog: record kind %q is in no kind table of %s (the domain's Kinds or the framework's): give it a format version before writing it", prop.Kind, r.domain)
	}
	return max(v, prop.Version), nil
}

// isGateKind reports whether kind installs a gate: the framework's node
// gates, or one the domain names (GatedDomain.GateKinds).
func (r *Replica) isGateKind(kind string) bool {
	for _, k := range frameworkGateKinds {
		if k == kind {
			return true
		}
	}
	for _, k := range r.gateKinds {
		if k == kind {
			return true
		}
	}
	return false
}
