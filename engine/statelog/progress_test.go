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
	// waiting returns once n goroutines wait; it fails as soon as one of
	// those that should still be waiting has returned instead (they
	// register in their own time, so only the test's timeout bounds it).
	waiting := func(n int, still ...uint64) {
		t.Helper()
		for ; ; time.Sleep(time.Millisecond) {
			for _, seq := range still {
				select {
				case err := <-done[seq]:
					t.Fatalf("the waiter for %d returned (%v) before the checkpoint reached it", seq, err)
				default:
				}
			}
			p.mu.Lock()
			got := len(p.waiters)
			p.mu.Unlock()
			if got == n {
				return
			}
		}
	}
	waiting(4, 7, 4, 9, 5)
	p.set(5, 5)
	for _, seq := range []uint64{4, 5} {
		if err := <-done[seq]; err != nil {
			t.Fatalf("waiter for %d: %v", seq, err)
		}
	}
	// set(5) woke only what it reached, and took those out as it did.
	waitersNow(t, &p, 2)
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan error, 1)
	go func() { gone <- p.wait(ctx, 8) }()
	waiting(3, 7, 9)
	cancel()
	if err := <-gone; err != context.Canceled {
		t.Fatalf("a waiter whose context ended: %v", err)
	}
	waitersNow(t, &p, 2) // it left before it returned
	p.set(9, 9)
	for _, seq := range []uint64{7, 9} {
		if err := <-done[seq]; err != nil {
			t.Fatalf("waiter for %d: %v", seq, err)
		}
	}
	waitersNow(t, &p, 0)
}

// waitersNow checks that p holds n waiters at this moment.
func waitersNow(t *testing.T, p *progress, n int) {
	t.Helper()
	p.mu.Lock()
	got := len(p.waiters)
	p.mu.Unlock()
	if got != n {
		t.Fatalf("%d waiters, want %d", got, n)
	}
}
