//go:build crewlet_nextformat

package trackrec

// In a build made with -tags crewlet_nextformat (the next release, played
// in the rolling-upgrade tests and never shipped) an update of a work item
// needs format 4: the current build retains every such record, and
// everything its scope meets, until it is upgraded.
func init() { Kinds[KindUpdateWorkItem] = 4 }
