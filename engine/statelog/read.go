package statelog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// ReadFunc reads rows inside the read's snapshot.
type ReadFunc func(ctx context.Context, tx *sql.Tx) error

// Read serves one read at the level opts asks for, or refuses with the
// code that says what to do; it never answers at a weaker level than asked.
// fn runs inside one snapshot whose checkpoint is the answer's seen_through.
func (r *Replica) Read(ctx context.Context, opts engine.ReadOptions, fn ReadFunc) (engine.ReadInfo, error) {
	if err := r.admit(ctx, opts); err != nil {
		return engine.ReadInfo{}, err
	}
	tx, err := sqlite.BeginRead(ctx, r.cfg.DB)
	if err != nil {
		return engine.ReadInfo{}, err
	}
	defer tx.Rollback()
	// The checkpoint is read first, inside the same snapshot as the rows:
	// that is what makes seen_through the position the rows stand at.
	var seen uint64
	if err := r.QueryRow(ctx, tx, `SELECT seq FROM statelog_checkpoint WHERE domain = ?`, string(r.domain)).Scan(&seen); err != nil {
		return engine.ReadInfo{}, err
	}
	if err := fn(ctx, tx); err != nil {
		return engine.ReadInfo{}, err
	}
	info := engine.ReadInfo{Level: opts.Level, SeenThrough: r.Position(seen), Complete: true}
	if opts.Level != engine.ConsistentPrefix {
		info.Lag = r.lag(seen)
	}
	inc, err := r.incomplete(ctx, tx)
	if err != nil {
		return engine.ReadInfo{}, err
	}
	if inc != nil {
		info.Complete, info.Incomplete = false, inc
	}
	return info, nil
}

// admit decides whether the read can be served at its level, waiting for
// what the level needs (a barrier, a position) within the read budget.
func (r *Replica) admit(ctx context.Context, opts engine.ReadOptions) error {
	if opts.MinPosition != nil {
		if err := r.checkPosition(*opts.MinPosition); err != nil {
			return err
		}
	}
	if opts.Level != engine.Stale && (opts.MaxLagSeq != 0 || opts.MaxLagSeconds != 0) {
		return engine.Refuse(engine.CodeInvalidArgument, "max_lag_seq and max_lag_seconds bound a stale read and nothing else; drop them, or ask for read_level=stale.")
	}
	fault := r.Fault()
	switch opts.Level {
	case engine.Linearizable:
		if fault != nil {
			return r.stalledRefusal(fault)
		}
		if !r.cfg.Publishing {
			return engine.RefuseDoc(engine.CodeMaintenance)
		}
		bctx, cancel := context.WithTimeout(ctx, r.cfg.PublishTimeout)
		seq, err := r.Barrier(bctx)
		cancel()
		if err != nil {
			return r.barrierRefusal(err)
		}
		return r.waitFor(ctx, seq, "the barrier this read appended")
	case engine.Session:
		if opts.MinPosition == nil {
			return engine.Refuse(engine.CodeInvalidArgument, "read_level=session needs min_position, the position your write answered with; without one, ask for read_level=linearizable, or read_level=stale with max_lag_seq.").With("key", "min_position")
		}
		if fault != nil {
			return r.stalledRefusal(fault)
		}
		return r.waitFor(ctx, opts.MinPosition.Seq, "min_position "+opts.MinPosition.Token())
	case engine.Stale:
		if fault != nil {
			return r.stalledRefusal(fault)
		}
		if opts.MinPosition != nil {
			if err := r.waitFor(ctx, opts.MinPosition.Seq, "min_position "+opts.MinPosition.Token()); err != nil {
				return err
			}
		}
		applied := r.Applied()
		lag := r.lag(applied)
		if opts.MaxLagSeq != 0 && lag.Seq > opts.MaxLagSeq {
			return r.tooStale(lag, fmt.Sprintf("%d records behind, past max_lag_seq=%d", lag.Seq, opts.MaxLagSeq))
		}
		if opts.MaxLagSeconds != 0 {
			if lag.Seconds == nil {
				if lag.Seq > 0 {
					return r.tooStale(lag, "its lag in seconds is unmeasurable (no drain measured yet) while max_lag_seconds is set")
				}
			} else if *lag.Seconds > opts.MaxLagSeconds {
				return r.tooStale(lag, fmt.Sprintf("%.3f s behind, past max_lag_seconds=%g", *lag.Seconds, opts.MaxLagSeconds))
			}
		}
		return nil
	case engine.ConsistentPrefix:
		if opts.MinPosition != nil {
			return r.waitFor(ctx, opts.MinPosition.Seq, "min_position "+opts.MinPosition.Token())
		}
		return nil
	}
	return engine.Refuse(engine.CodeInvalidArgument, "read level %q is not one of linearizable, session, stale, consistent_prefix.", opts.Level)
}

func (r *Replica) checkPosition(p engine.Position) error {
	if p.Stream != r.stream {
		return engine.Refuse(engine.CodeWrongStream, "position %s is on %s, but this read is on %s; pass a position this domain's writes answered with.", p.Token(), p.Stream, r.stream)
	}
	if p.Generation != r.cfg.Generation {
		return engine.Refuse(engine.CodeWrongStream, "position %s is in generation %d, but this node's %s rows are in generation %d; a cursor from before a reanchor compares with nothing here.", p.Token(), p.Generation, r.stream, r.cfg.Generation)
	}
	return nil
}

// waitFor waits up to the read budget for the applier to reach seq, else
// refuses behind with a hint derived from the measured drain.
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
	if f := r.Fault(); f != nil {
		return r.stalledRefusal(f)
	}
	return r.behind(seq, what)
}

func (r *Replica) behind(seq uint64, what string) *engine.Refusal {
	applied := r.Applied()
	ref := engine.Refuse(engine.CodeBehind, "this node has applied %s through %d and has not yet reached %d (%s); retry after the hint, it clears on its own.",
		r.stream, applied, seq, what)
	ref.RetryAfter = r.retryHint(seq - min(seq, applied))
	p := r.Position(seq)
	ref.Position = &p
	return ref
}

// retryHint turns a distance in records into seconds through the measured
// drain, rounded up to a tenth, at least a tenth.
func (r *Replica) retryHint(records uint64) float64 {
	rate := r.drain.get()
	if rate <= 0 {
		return 1
	}
	return math.Max(0.1, math.Ceil(float64(records)/rate*10)/10)
}

func (r *Replica) tooStale(lag *engine.Lag, why string) *engine.Refusal {
	ref := engine.Refuse(engine.CodeTooStale, "this node is %s; retry after the hint, or accept more staleness.", why)
	ref.RetryAfter = r.retryHint(lag.Seq)
	return ref.With("lag", lag)
}

func (r *Replica) stalledRefusal(fault error) *engine.Refusal {
	applied := r.Applied()
	return engine.Refuse(engine.CodeStalled, "this node's %s applier is stuck at %d retrying: %v. Its rows are frozen; check the applier with `crewlet retention status` (a retried failure clears on its own when an attempt succeeds).",
		r.stream, applied, fault).With("error", fault.Error()).With("domain", string(r.domain))
}

func (r *Replica) barrierRefusal(err error) *engine.Refusal {
	switch {
	case errors.Is(err, errNotPublishing):
		return engine.RefuseDoc(engine.CodeMaintenance)
	case errors.Is(err, ErrLogFull):
		return engine.Refuse(engine.CodeLogFull, "%s is at the byte ceiling its ordinary appends are held to, so no barrier can be written. Raise it with `crewlet retention set-capacity`, or unblock the trim; stale reads keep answering.", r.stream)
	case errors.Is(err, ErrNoQuorum):
		return engine.Refuse(engine.CodeNoQuorum, "the barrier on %s did not commit: the broker answered and a majority did not agree. Retry after the hint; if it persists, a member is down or partitioned.", r.stream)
	}
	return engine.Refuse(engine.CodeBrokerUnreachable, "the broker did not answer the barrier on %s (%v). Retry; if it persists, check the broker.", r.stream, err)
}

// lag is the distance from seq to the log's end as this node last learnt
// it, with seconds where the drain is measured.
func (r *Replica) lag(seq uint64) *engine.Lag {
	end := r.logEnd.Load()
	l := &engine.Lag{}
	if end > seq {
		l.Seq = end - seq
	}
	if l.Seq == 0 {
		z := 0.0
		l.Seconds = &z
		return l
	}
	if rate := r.drain.get(); rate > 0 {
		s := float64(l.Seq) / rate
		l.Seconds = &s
	}
	return l
}

// incomplete reports the records retained undecoded, which could
// intersect any set answer of this domain.
func (r *Replica) incomplete(ctx context.Context, tx *sql.Tx) (*engine.Incomplete, error) {
	if r.retained.Load() == 0 {
		return nil, nil
	}
	var n int
	var from sql.NullInt64
	if err := tx.QueryRowContext(ctx, `SELECT count(*), min(seq) FROM statelog_retained WHERE domain = ?`, string(r.domain)).Scan(&n, &from); err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, nil
	}
	rows, err := tx.QueryContext(ctx, `SELECT DISTINCT value FROM statelog_retained, json_each(statelog_retained.scope) WHERE domain = ? ORDER BY value`, string(r.domain))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	scope := []string{}
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		scope = append(scope, s)
	}
	return &engine.Incomplete{Records: n, From: r.Position(uint64(from.Int64)), Scope: scope, Direction: "unknown"}, rows.Err()
}
