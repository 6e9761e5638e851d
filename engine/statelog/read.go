package statelog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// ReadFunc reads rows inside the read's snapshot.
type ReadFunc func(ctx context.Context, tx *sql.Tx) error

// ObjectReadFunc reads one object inside the read's snapshot and returns
// the scope the answer is about (item:<id>, or project:<KEY> for an item
// that is not there), even alongside an error such as not_found.
type ObjectReadFunc func(ctx context.Context, tx *sql.Tx) (scope []string, err error)

// Read serves one set read at the level opts asks for, or refuses with the
// code that says what to do; it never answers at a weaker level than asked.
// fn runs inside one snapshot whose checkpoint is the answer's seen_through.
// A record retained undecoded makes the answer incomplete, with a block
// saying how many, from where and under what scope.
//
// opts.MinPosition is the engine-level floor (a write's position, a seat's
// trigger position): the answer is from no earlier than it, at any level.
func (r *Replica) Read(ctx context.Context, opts engine.ReadOptions, fn ReadFunc) (engine.ReadInfo, error) {
	return r.read(ctx, opts, func(ctx context.Context, tx *sql.Tx) ([]string, error) { return nil, fn(ctx, tx) }, false)
}

// AtLogEnd are the options of a read whose rows hold at least what the
// log held when it was called: a session read at the log's last sequence
// as the broker reports it, appending nothing (a linearizable read would
// append a barrier each time). A node's own duties read this way: one
// still replaying its log would otherwise act on rows it has not caught
// up yet (embed an older text, forget a source it has not reached).
func (r *Replica) AtLogEnd(ctx context.Context) (engine.ReadOptions, error) {
	info, err := r.LogInfo(ctx)
	if err != nil {
		return engine.ReadOptions{}, err
	}
	end := r.Position(info.LastSeq)
	return engine.ReadOptions{Level: engine.Session, MinPosition: &end}, nil
}

// ReadObject serves a read of one object: like Read, but a retained record
// whose declared scope meets the scope fn returns refuses deferred, since
// a row this node cannot show may be the answer.
func (r *Replica) ReadObject(ctx context.Context, opts engine.ReadOptions, fn ObjectReadFunc) (engine.ReadInfo, error) {
	return r.read(ctx, opts, fn, true)
}

func (r *Replica) read(ctx context.Context, opts engine.ReadOptions, fn ObjectReadFunc, object bool) (engine.ReadInfo, error) {
	adm, err := r.admit(ctx, opts)
	if err != nil {
		return engine.ReadInfo{}, err
	}
	return r.readAdmitted(ctx, adm, fn, object)
}

// readAdmitted runs fn in one read transaction once admission has served.
func (r *Replica) readAdmitted(ctx context.Context, adm Admission, fn ObjectReadFunc, object bool) (engine.ReadInfo, error) {
	// Where the applier stood before the snapshot opened: past the
	// committed checkpoint only by barriers passed without a transaction
	// (passed.go), which change no row.
	passed := r.Applied()
	tx, err := sqlite.BeginRead(ctx, r.cfg.DB)
	if err != nil {
		return engine.ReadInfo{}, err
	}
	defer tx.Rollback()
	// The checkpoint is read first, inside the same snapshot as the rows:
	// that is what makes seen_through the position the rows stand at. A
	// snapshot whose checkpoint is below passed stands at passed too:
	// everything between is a held barrier (a commit after passed was
	// read writes a checkpoint at or past it).
	var seen uint64
	if err := r.Prepared(tx).QueryRowContext(ctx, `SELECT seq FROM statelog_checkpoint WHERE domain = ?`, string(r.domain)).Scan(&seen); err != nil {
		return engine.ReadInfo{}, err
	}
	seen = max(seen, passed, adm.Through)
	scope, fnErr := fn(ctx, tx)
	info := engine.ReadInfo{Level: adm.Level, SeenThrough: r.Position(seen), Complete: true}
	if r.retained.Load() > 0 {
		held, err := r.retainedIn(ctx, tx)
		if err != nil {
			return engine.ReadInfo{}, err
		}
		if object {
			if d := deferredFor(r, held, scope); d != nil {
				return engine.ReadInfo{}, d
			}
		} else if inc := incompleteOf(r, held); inc != nil {
			info.Complete, info.Incomplete = false, inc
		}
	}
	if fnErr != nil {
		return engine.ReadInfo{}, fnErr
	}
	r.lagInto(&info, seen)
	return info, nil
}

// lagInto reports the answer's lag behind the log's end, at every level:
// consistent_prefix claims no age, but the distance it stands behind the
// log is still reported on the answer (Read Consistency › Reading your
// own write back), so a reader can tell how far behind the prefix is.
func (r *Replica) lagInto(info *engine.ReadInfo, seen uint64) {
	info.Lag = LagOf(seen, r.logEnd.Load(), r.drain.get())
	if info.Lag.Seconds == nil {
		info.Note = LagUnmeasured
	}
}

// maxAdmitSteps bounds admission's loop: a barrier, a wait and a verdict.
const maxAdmitSteps = 6

// admit runs Admit against this replica, doing what it asks (append a
// barrier, wait within the read budget) until it refuses or serves.
func (r *Replica) admit(ctx context.Context, opts engine.ReadOptions) (Admission, error) {
	req := AdmitRequest{Options: opts}
	for step := 0; step < maxAdmitSteps; step++ {
		a := Admit(req, r.state())
		switch {
		case a.Refusal != nil:
			return a, a.Refusal
		case a.AppendBarrier:
			bctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
			seq, atEnd, err := r.establishLogEnd(bctx)
			cancel()
			if err != nil && ctx.Err() != nil {
				return a, ctx.Err()
			}
			if err == nil && seq == 0 && !atEnd {
				err = errors.New("statelog: the barrier was acknowledged at no sequence")
			}
			req.BarrierSeq, req.BarrierErr, req.AtEnd = seq, err, atEnd
		case a.WaitFor > 0:
			wctx, cancel := context.WithTimeout(ctx, r.cfg.ReadBudget)
			err := r.WaitApplied(wctx, a.WaitFor)
			cancel()
			if err != nil {
				if ctx.Err() != nil {
					return a, ctx.Err()
				}
				req.WaitExpired = true
			}
		default:
			return a, nil
		}
	}
	return Admission{}, fmt.Errorf("statelog: admission of a %s read did not settle in %d steps", opts.Level, maxAdmitSteps)
}

// state is this replica's standing for admission, taken without a broker
// call.
func (r *Replica) state() NodeState {
	floor, floorErr := r.Floor()
	return NodeState{
		Stream:       r.stream,
		Generation:   r.generation(),
		Applied:      r.Applied(),
		LogEnd:       r.logEnd.Load(),
		DrainRate:    r.drain.get(),
		Fault:        r.fault(),
		Publishing:   r.cfg.Publishing,
		ScopeUnknown: r.scopeUnknown.Load(),
		Evicted:      r.evicted.Load(),
		Floor:        floor,
		FloorUnknown: floorErr != nil,
		FloorErr:     floorErr,
		BelowFloor:   r.belowFloor.Load(),
		WrongLog:     r.wrongLogWhy(),
	}
}

// waitFor waits up to the read budget for the applier to reach seq, else
// refuses behind (or stalled) with a hint derived from the measured drain.
// The write path uses it for read-your-writes.
func (r *Replica) waitFor(ctx context.Context, seq uint64, what string) error {
	wctx, cancel := context.WithTimeout(ctx, r.cfg.ReadBudget)
	defer cancel()
	err := r.WaitApplied(wctx, seq)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	st := r.state()
	if st.Fault != nil {
		return stalled(st)
	}
	return behind(st, seq, what)
}

func (r *Replica) stalledRefusal(fault error) *engine.Refusal {
	st := r.state()
	st.Fault = fault
	return stalled(st)
}

// lag is the distance from seq to the log's end as this node last learnt
// it, with seconds where the drain is measured.
func (r *Replica) lag(seq uint64) *engine.Lag { return LagOf(seq, r.logEnd.Load(), r.drain.get()) }

// heldRecord is one row of statelog_retained as a read needs it.
type heldRecord struct {
	seq        uint64
	scope      []string
	scopeKnown bool
}

func (r *Replica) retainedIn(ctx context.Context, tx *sql.Tx) ([]heldRecord, error) {
	rows, err := tx.QueryContext(ctx, `SELECT seq, scope, scope_known FROM statelog_retained WHERE domain = ? ORDER BY seq`, string(r.domain))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []heldRecord
	for rows.Next() {
		var h heldRecord
		var scope string
		if err := rows.Scan(&h.seq, &scope, &h.scopeKnown); err != nil {
			return nil, err
		}
		_ = json.Unmarshal([]byte(scope), &h.scope)
		out = append(out, h)
	}
	return out, rows.Err()
}

// incompleteOf is the incomplete block of a set answer: every retained
// record of the domain could intersect a set, since a record this build
// cannot decode may add a row to it as well as take one away.
func incompleteOf(r *Replica, held []heldRecord) *engine.Incomplete {
	if len(held) == 0 {
		return nil
	}
	scope := []string{}
	for _, h := range held {
		for _, s := range h.scope {
			if !slices.Contains(scope, s) {
				scope = append(scope, s)
			}
		}
	}
	slices.Sort(scope)
	return &engine.Incomplete{Records: len(held), From: r.Position(held[0].seq), Scope: scope, Direction: "unknown"}
}

// deferredFor refuses an object read whose scope meets a retained
// record's declared scope.
func deferredFor(r *Replica, held []heldRecord, scope []string) *engine.Refusal {
	var meets []string
	var from uint64
	n := 0
	for _, h := range held {
		hit := false
		for _, s := range h.scope {
			if slices.ContainsFunc(scope, func(e string) bool { return scopeMeets(s, e) }) {
				hit = true
				if !slices.Contains(meets, s) {
					meets = append(meets, s)
				}
			}
		}
		if hit {
			if n == 0 {
				from = h.seq
			}
			n++
		}
	}
	if n == 0 {
		return nil
	}
	p := r.Position(from)
	ref := engine.Refuse(engine.CodeDeferred, "this node holds %d record(s) from %s it cannot decode covering %s, so it cannot show this object as the log has it. Ask another node, or upgrade this one; waiting changes nothing.",
		n, p.Token(), strings.Join(meets, ", "))
	ref.Position = &p
	return ref.With("scope", meets).With("records", n)
}
