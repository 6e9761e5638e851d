package peerbench

import (
	"context"
	"sync"
	"testing"
	"time"
)

// clockMeter is a CPUMeter whose processes spend a whole core until
// busyUntil and nothing after.
type clockMeter struct {
	mu        sync.Mutex
	busyUntil time.Time
	start     time.Time
}

func (m *clockMeter) ServerCPU() (time.Duration, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	now := time.Now()
	if now.After(m.busyUntil) {
		now = m.busyUntil
	}
	return now.Sub(m.start), nil
}

// TestDrainWaitsForQuiet: after a measurement of writes the bench waits
// while the target's processes are still busy (the work the writes left
// behind), and no longer than an interval once they are quiet.
func TestDrainWaitsForQuiet(t *testing.T) {
	now := time.Now()
	busy := &clockMeter{start: now, busyUntil: now.Add(4 * drainInterval)}
	took, err := drain(context.Background(), busy)
	if err != nil {
		t.Fatal(err)
	}
	if took < 4*drainInterval {
		t.Errorf("drain returned after %v, while the processes were busy for %v", took, 4*drainInterval)
	}
	quiet := &clockMeter{start: now, busyUntil: now}
	took, err = drain(context.Background(), quiet)
	if err != nil || took < drainInterval {
		t.Errorf("a quiet target drained in %v (%v): want one interval", took, err)
	}
	// On a loaded machine an interval may run long; quiet is still seen
	// on the first one.
	if took >= drainMax {
		t.Errorf("a quiet target was waited for %v", took)
	}
}
