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

// gapMeter is a CPUMeter whose processes spend a whole core until
// pauseAt, nothing until resumeAt, and a whole core again until busyUntil:
// a duty that starts its next pass a moment after the writes' own work.
type gapMeter struct {
	start, pauseAt, resumeAt, busyUntil time.Time
}

func (m *gapMeter) ServerCPU() (time.Duration, error) {
	now := min(time.Now().UnixNano(), m.busyUntil.UnixNano())
	spent := min(now, m.pauseAt.UnixNano()) - m.start.UnixNano()
	if now > m.resumeAt.UnixNano() {
		spent += now - m.resumeAt.UnixNano()
	}
	return time.Duration(spent), nil
}

// TestDrainWaitsForQuiet: after a measurement of writes the bench waits
// while the target's processes are still busy (the work the writes left
// behind), through a pause shorter than drainQuietFor (a duty's next
// tick), and says how long they were busy; a quiet target is waited for
// drainQuietFor and reported not busy.
func TestDrainWaitsForQuiet(t *testing.T) {
	now := time.Now()
	busy := &clockMeter{start: now, busyUntil: now.Add(4 * drainInterval)}
	took, err := drain(context.Background(), busy)
	if err != nil {
		t.Fatal(err)
	}
	// The interval the work ends in may count as quiet already.
	if took < 3*drainInterval || time.Since(now) < 4*drainInterval+drainQuietFor-drainInterval {
		t.Errorf("drain said busy for %v and returned after %v, while the processes were busy for %v", took, time.Since(now), 4*drainInterval)
	}

	now = time.Now()
	gap := &gapMeter{start: now, pauseAt: now.Add(2 * drainInterval), resumeAt: now.Add(4 * drainInterval), busyUntil: now.Add(6 * drainInterval)}
	took, err = drain(context.Background(), gap)
	if err != nil {
		t.Fatal(err)
	}
	if took < 5*drainInterval {
		t.Errorf("drain said busy for %v: it stopped at the pause, before the work after it (busy until %v)", took, 6*drainInterval)
	}

	now = time.Now()
	quiet := &clockMeter{start: now, busyUntil: now}
	took, err = drain(context.Background(), quiet)
	if err != nil || took >= drainInterval || time.Since(now) < drainQuietFor {
		t.Errorf("a quiet target: busy for %v, waited %v (%v): want none, and drainQuietFor waited", took, time.Since(now), err)
	}
	// On a loaded machine an interval may run long; quiet is still seen
	// from the first one.
	if time.Since(now) >= drainMax {
		t.Errorf("a quiet target was waited for %v", time.Since(now))
	}
}
