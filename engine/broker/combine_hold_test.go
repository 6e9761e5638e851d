package broker

import (
	"testing"
	"time"
)

// TestCombinerHoldsAShortQueueWhileAppendsAreUnderWay: a queue too short
// to batch waits while appends sent alone are still under way on the log,
// for at most holdMax, and goes out at once when nothing else is under
// way, when it is long enough, or when it is empty.
func TestCombinerHoldsAShortQueueWhileAppendsAreUnderWay(t *testing.T) {
	c := newCombiner(nil, "S")
	queue := func(n int) {
		c.queue = c.queue[:0]
		for i := 0; i < n; i++ {
			c.queue = append(c.queue, &queuedAppend{})
		}
	}
	var held time.Time
	queue(2)
	c.active.Store(10)
	if !c.hold(&held) || held.IsZero() {
		t.Fatalf("2 queued beside 8 under way alone: not held (held since %v)", held)
	}
	if !c.hold(&held) {
		t.Fatalf("held again within holdMax: let go")
	}
	held = time.Now().Add(-holdMax - time.Millisecond)
	if c.hold(&held) || !held.IsZero() {
		t.Fatalf("held past holdMax")
	}
	for _, tc := range []struct {
		queued, active int
		why            string
	}{
		{2, 2, "nothing else under way"},
		{batchMin, 10, "long enough to batch"},
		{0, 10, "empty"},
	} {
		queue(tc.queued)
		c.active.Store(int64(tc.active))
		if c.hold(&held) {
			t.Errorf("%d queued, %d under way (%s): held", tc.queued, tc.active, tc.why)
		}
	}
}
