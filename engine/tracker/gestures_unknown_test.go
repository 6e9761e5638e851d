//go:build integration

package tracker_test

import (
	"testing"
	"time"
)

// TestGestureUnknownAtEveryStep: for every gesture and every step, that
// step's acknowledgement is lost (the record landed, or was never sent)
// and the lookup after it finds nothing, so the step is unknown. The walk
// ends there — nothing after it is published, a mid-gesture mark stays, a
// mirror not vouched for is reported one-sided — and the gesture answers
// unknown under its own op id. Running it again under that id finishes it,
// and the rows equal an uninterrupted run's.
func TestGestureUnknownAtEveryStep(t *testing.T) {
	t0 := time.Now()
	for _, g := range gestures {
		t.Run(g.name, func(t *testing.T) {
			gw, want := uninterrupted(t, g, t0)
			for k := 1; k <= g.steps; k++ {
				unknownAtStep(t, g, t0, k, gw, want)
			}
		})
	}
}
