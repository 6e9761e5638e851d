package turns

import (
	"sort"
	"sync"

	"github.com/crewlet/crewlet/engine"
)

// Floors is a node's read-your-writes floors: one table per node, one
// position per log, raised by every write the node makes (its answer's
// position) and by the trigger position a turn on the node starts from.
// Every seat read on the node carries the floor on its own domain's log
// to whichever node answers it, so a turn never reads from before what
// its node wrote or what woke it, and the caller carries nothing. A
// position in a newer generation replaces an older generation's.
type Floors struct {
	mu sync.Mutex
	by map[string]engine.Position
}

// NewFloors is an empty table.
func NewFloors() *Floors { return &Floors{by: map[string]engine.Position{}} }

// Raise raises the floor on p's log to p; a lower position, or one in an
// older generation, leaves it.
func (f *Floors) Raise(p engine.Position) {
	if p.IsZero() || p.Stream == "" {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.by[p.Stream]
	if !ok || p.Generation > cur.Generation || p.Generation == cur.Generation && p.Seq > cur.Seq {
		f.by[p.Stream] = p
	}
}

// Floor is the floor on stream's log, nil while nothing raised it.
func (f *Floors) Floor(stream string) *engine.Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.by[stream]
	if !ok {
		return nil
	}
	return &p
}

// All is every log's floor, by stream.
func (f *Floors) All() []engine.Position {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]engine.Position, 0, len(f.by))
	for _, p := range f.by {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Stream < out[j].Stream })
	return out
}

// Higher is the higher of two floors on one log (either may be nil): the
// later generation's, else the greater sequence.
func Higher(a, b *engine.Position) *engine.Position {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case b.Generation > a.Generation || b.Generation == a.Generation && b.Seq > a.Seq:
		return b
	}
	return a
}
