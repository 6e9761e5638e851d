package statelog

import (
	"sync"
	"sync/atomic"
)

// Applied is one record a batch applied on this node, told after the
// batch committed: its sequence, kind, subject and scope (every object it
// may have changed).
type Applied struct {
	Seq     uint64
	Kind    string
	Subject string
	Scope   []string
}

// observers are the funcs told of every commit's applied records: the
// post-commit seam (MCP resource subscriptions hang on it). Only the
// applier goroutine fills told.
type observers struct {
	mu     sync.Mutex
	next   int
	fns    map[int]func([]Applied)
	active atomic.Bool
	told   []Applied
}

// OnApplied calls fn after each batch commit with the records the batch
// applied, in log order (a gated record, a second copy of an operation
// and the framework's node-gate records are not among them). fn runs on
// the applier, after the commit (the batch's rows are readable) and
// before the acknowledgement and the waiting writes are told: it must not
// block, nor wait on this applier (a write, a read at a level that waits
// for this node to apply). The returned func stops the calls.
func (r *Replica) OnApplied(fn func([]Applied)) (stop func()) {
	o := &r.observers
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.fns == nil {
		o.fns = map[int]func([]Applied){}
	}
	id := o.next
	o.next++
	o.fns[id] = fn
	o.active.Store(true)
	return func() {
		o.mu.Lock()
		defer o.mu.Unlock()
		delete(o.fns, id)
		o.active.Store(len(o.fns) > 0)
	}
}

// note keeps one applied record for the batch's commit.
func (o *observers) note(seq uint64, kind, subject string, scope []string) {
	if o.active.Load() {
		o.told = append(o.told, Applied{Seq: seq, Kind: kind, Subject: subject, Scope: scope})
	}
}

// reset forgets what a batch that did not commit noted.
func (o *observers) reset() { o.told = o.told[:0] }

// tell hands a committed batch's records to every observer.
func (o *observers) tell() {
	if len(o.told) == 0 {
		return
	}
	batch := append([]Applied(nil), o.told...)
	o.told = o.told[:0]
	o.mu.Lock()
	fns := make([]func([]Applied), 0, len(o.fns))
	for _, fn := range o.fns {
		fns = append(fns, fn)
	}
	o.mu.Unlock()
	for _, fn := range fns {
		fn(batch)
	}
}
