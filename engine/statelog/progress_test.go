package statelog

import (
	"context"
	"testing"
	"time"
)

// A waiter is woken by the advance that reaches its sequence, not by an
// earlier one; one whose context ends leaves the waiters.
func TestProgressWakesEachWaiterAtItsSequence(t *testing.T) {
	var p progress
	p.set(2, 2)
	if err := p.wait(context.Background(), 2); err != nil {
		t.Fatalf("a sequence already reached: %v", err)
	}
	done := map[uint64]chan error{}
	for _, seq := range []uint64{7, 4, 9, 5} {
		c := make(chan error, 1)
		done[seq] = c
		go func() { c <- p.wait(context.Background(), seq) }()
	}
	// waiting returns once n goroutines wait (they register in their own
	// time; the test's own timeout bounds a count that never comes).
	waiting := func(n int) {
		t.Helper()
		for ; ; time.Sleep(time.Millisecond) {
			p.mu.Lock()
			got := len(p.waiters)
			p.mu.Unlock()
			if got == n {
				return
			}
		}
	}
	waiting(4)
	p.set(5, 5)
	for _, seq := range []uint64{4, 5} {
		if err := <-done[seq]; err != nil {
			t.Fatalf("waiter for %d: %v", seq, err)
		}
	}
	waiting(2) // 7 and 9 still wait: set(5) woke only what it reached
	for _, seq := range []uint64{7, 9} {
		select {
		case err := <-done[seq]:
			t.Fatalf("the waiter for %d returned (%v) at 5", seq, err)
		default:
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- p.wait(ctx, 8) }()
	waiting(3)
	cancel()
	if err := <-gone; err != context.Canceled {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	waiting(2)
	p.set(9, 9)
	for _, seq := range []uint64{7, 9} {
		if err := <-done[seq]; err != nil {
			t.Fatalf("waiter for %d: %v", seq, err)
		}
	}
	waiting(0)
}
