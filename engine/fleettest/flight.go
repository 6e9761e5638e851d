package fleettest

import (
	"context"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
)

// flightLines is how many of a node's newest log lines a failed test
// prints.
const flightLines = 400

// flight keeps each node's newest log lines at Info and above (its
// broker's own lines among them: the embedded nats-server logs through
// the node's logger), so a test that fails on a fleet that misbehaved
// only under load says what the brokers were doing. Lines still go to
// the node's own logger as well.
type flight struct {
	mu    sync.Mutex
	rings [][]string
	next  []int
}

func newFlight(size int) *flight {
	f := &flight{rings: make([][]string, size), next: make([]int, size)}
	for i := range f.rings {
		f.rings[i] = make([]string, 0, flightLines)
	}
	return f
}

func (f *flight) add(i int, line string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.rings[i]) < flightLines {
		f.rings[i] = append(f.rings[i], line)
		return
	}
	f.rings[i][f.next[i]] = line
	f.next[i] = (f.next[i] + 1) % flightLines
}

// dump prints every node's lines, oldest first, when t failed.
func (f *flight) dump(t testing.TB) {
	if !t.Failed() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, ring := range f.rings {
		ordered := append(append([]string{}, ring[f.next[i]:]...), ring[:f.next[i]]...)
		t.Logf("n%d's last %d log lines:\n%s", i+1, len(ordered), strings.Join(ordered, "\n"))
	}
}

// handler is node i's logger: inner, teed into the ring.
func (f *flight) handler(i int, inner slog.Handler) slog.Handler {
	return &flightHandler{f: f, i: i, inner: inner}
}

type flightHandler struct {
	f     *flight
	i     int
	inner slog.Handler
	attrs []slog.Attr
}

func (h *flightHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelInfo || h.inner.Enabled(ctx, l)
}

func (h *flightHandler) Handle(ctx context.Context, r slog.Record) error {
	// A broker's lines about single connections (" - rid:", " - cid:")
	// come by the hundred as routes are cut and made again, and would
	// push out the lines that say what the cluster did.
	if r.Level >= slog.LevelInfo && !strings.Contains(r.Message, " - rid:") && !strings.Contains(r.Message, " - cid:") {
		var b strings.Builder
		fmt.Fprintf(&b, "%s %s %s", r.Time.Format("15:04:05.000"), r.Level, r.Message)
		for _, a := range h.attrs {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
		}
		r.Attrs(func(a slog.Attr) bool {
			fmt.Fprintf(&b, " %s=%v", a.Key, a.Value)
			return true
		})
		h.f.add(h.i, b.String())
	}
	if h.inner.Enabled(ctx, r.Level) {
		return h.inner.Handle(ctx, r)
	}
	return nil
}

func (h *flightHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &flightHandler{f: h.f, i: h.i, inner: h.inner.WithAttrs(as), attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

// WithGroup keeps the group on the inner handler only: the ring's lines
// are for reading, flat.
func (h *flightHandler) WithGroup(name string) slog.Handler {
	return &flightHandler{f: h.f, i: h.i, inner: h.inner.WithGroup(name), attrs: h.attrs}
}

// stuck is the stacks of this process's goroutines that have waited a
// minute or more on a lock or a channel send: what a node whose open ran
// out of time may have been waiting behind, inside its broker or
// ours. A goroutine parked that long in a select or a receive is an idle
// loop, and is left out.
func stuck() string {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		head, _, _ := strings.Cut(g, "\n")
		if !strings.Contains(head, "minutes]") {
			continue
		}
		if strings.Contains(head, "[semacquire") || strings.Contains(head, "[sync.Mutex.Lock") ||
			strings.Contains(head, "[sync.RWMutex") || strings.Contains(head, "[chan send") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}
