package statelog_test

import (
	"testing"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/record/recordtest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// TestFrameworkKindsDecided: every record kind the framework declares has
// a format-version decision; the barrier and the node gates stay at 1 for
// good, and a capacity record, which a format-2 build does not know (it
// would write no audit row for it), is past 2.
func TestFrameworkKindsDecided(t *testing.T) {
	kinds := statelog.FrameworkKinds()
	declared := recordtest.DeclaredKinds(t, ".")
	declared["KindBarrier"] = record.KindBarrier
	for name, kind := range declared {
		if _, ok := kinds[kind]; !ok {
			t.Errorf("%s (%q) has no format-version decision in the framework's kinds", name, kind)
		}
	}
	for _, k := range []string{record.KindBarrier, statelog.KindEvict, statelog.KindReadmit} {
		if kinds[k] != 1 {
			t.Errorf("%s is stamped %d, want 1 for good", k, kinds[k])
		}
	}
	if kinds[statelog.KindCapacity] <= 2 {
		t.Errorf("a capacity record is stamped %d: a format-2 build would apply nothing for it", kinds[statelog.KindCapacity])
	}
}
