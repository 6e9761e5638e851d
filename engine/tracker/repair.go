package tracker

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/duty"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

// The tracker duty: one data node of the fleet at a time finishes the
// mirrors gestures left owed (trackapply's tracker_mirror_due: a
// dependency's mirror a gesture stopped at unknown before, or whose own
// outcome was unknown — reported one_sided).
const (
	// DutyName names the tracker's duty fleet-wide.
	DutyName = "tracker"
	// MirrorGrace is how old an owed mirror is before the duty finishes
	// it: a gesture writes its mirrors right after the record that owes
	// them, and one still under way is left to do it itself.
	MirrorGrace = 30 * time.Second
	// RepairEvery is how often the holder looks for owed mirrors.
	RepairEvery = 10 * time.Second
	// repairBatch bounds the mirrors one pass finishes.
	repairBatch = 100
	// repairMaxAge is how old an owed mirror may be and still be
	// finished: its step's id must be one a ledger can still vouch for
	// (30 days), or the write answers unknown on every pass.
	repairMaxAge = 29 * 24 * time.Hour
)

// Duties are the tracker's duties: the repair of one-sided mirrors.
func (s *Service) Duties() []duty.Job {
	return []duty.Job{{Name: DutyName, Run: duty.Every(RepairEvery, func(ctx context.Context, log *slog.Logger) error {
		_, err := s.RepairMirrors(ctx, MirrorGrace, log)
		return err
	})}}
}

var _ duty.Provider = (*Service)(nil)

// Repair is one owed mirror the duty finished, or tried to.
type Repair struct {
	// Item authored the edges; Other is the item the mirror is on.
	Item, Other string
	// OpID is the mirror step's own id: the gesture's step, derived from
	// the gesture's op id, "mirror" and the other item.
	OpID     string
	Outcome  engine.Outcome
	Position string
	// Err says why the step was refused, "" where it was not.
	Err string
}

// owed is one row of tracker_mirror_due.
type owed struct {
	step, item, other, digest string
}

// RepairMirrors finishes every mirror owed for longer than grace (up to
// repairBatch of them, oldest first), each under its gesture's own step
// id and argument digest: a step that already landed is answered from
// the ledger (or the log) and writes nothing again, and a gesture run
// again later finds its step answered. The mirror written is what makes
// the other item's mirror edges to the item match the item's authored
// edges to it now, so a later gesture on the same pair is never undone.
func (s *Service) RepairMirrors(ctx context.Context, grace time.Duration, log *slog.Logger) ([]Repair, error) {
	now := s.clock.Now()
	var due []owed
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.ConsistentPrefix}, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT step, item, other, digest FROM tracker_mirror_due WHERE at <= ? AND at >= ? ORDER BY seq, step LIMIT ?`,
			now.Add(-grace).UnixNano(), now.Add(-repairMaxAge).UnixNano(), repairBatch)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var o owed
			if err := rows.Scan(&o.step, &o.item, &o.other, &o.digest); err != nil {
				return err
			}
			due = append(due, o)
		}
		return rows.Err()
	})
	if err != nil || len(due) == 0 {
		return nil, err
	}
	out := make([]Repair, 0, len(due))
	var errs []error
	for _, o := range due {
		if ctx.Err() != nil {
			return out, ctx.Err()
		}
		r, err := s.repairOne(ctx, o)
		if err != nil {
			r.Err = err.Error()
			errs = append(errs, err)
		}
		out = append(out, r)
		if log != nil {
			log.Info("tracker_mirror_repaired", "item", s.keyOf(ctx, o.item), "other", s.keyOf(ctx, o.other), engine.LogOpID, r.OpID,
				"outcome", string(r.Outcome), engine.LogPosition, r.Position, engine.LogErr, r.Err)
		}
	}
	return out, errors.Join(errs...)
}

// repairOne writes one owed mirror under its step's id.
func (s *Service) repairOne(ctx context.Context, o owed) (Repair, error) {
	r := Repair{Item: o.item, Other: o.other, OpID: o.step}
	id, err := ledger.Parse(o.step)
	if err != nil {
		return r, err
	}
	op := statelog.Op{ID: id, Digest: o.digest, Vouched: true}
	wr, err := s.replica.Write(ctx, op, func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		m, err := mirrorDiff(ctx, tx, o.item, o.other)
		if err != nil {
			return nil, err
		}
		// The scope the gesture's own mirror step declares.
		scope, err := itemScope(ctx, tx, o.other, o.item)
		if err != nil {
			return nil, err
		}
		return &statelog.Proposal{Kind: trackrec.KindMirrorEdges, Subject: trackrec.ItemSubject(o.other), Scope: scope, Payload: m}, nil
	})
	r.Outcome, r.Position = wr.Outcome, wr.Position
	return r, err
}

// mirrorDiff is the mirror record that makes other's mirror edges to item
// match item's authored edges to other: each authored edge's mirror that
// other lacks, and each mirror edge on other whose authored edge item no
// longer holds.
func mirrorDiff(ctx context.Context, tx *sql.Tx, item, other string) (trackrec.MirrorEdges, error) {
	m := trackrec.MirrorEdges{ID: other}
	authored, err := sqlite.Strings(ctx, tx, `SELECT kind FROM tracker_edges WHERE item = ? AND other = ? AND authored = 1 ORDER BY kind`, item, other)
	if err != nil {
		return m, err
	}
	mirrors, err := sqlite.Strings(ctx, tx, `SELECT kind FROM tracker_edges WHERE item = ? AND other = ? AND authored = 0 ORDER BY kind`, other, item)
	if err != nil {
		return m, err
	}
	want := map[string]bool{}
	for _, k := range authored {
		want[trackrec.MirrorOf(k)] = true
	}
	have := map[string]bool{}
	for _, k := range mirrors {
		have[k] = true
		if !want[k] {
			m.Remove = append(m.Remove, trackrec.EdgeRef{Kind: k, Other: item})
		}
	}
	for _, k := range authored {
		if mk := trackrec.MirrorOf(k); !have[mk] {
			have[mk] = true
			m.Add = append(m.Add, trackrec.EdgeRef{Kind: mk, Other: item})
		}
	}
	return m, nil
}

// MirrorStepVerb is the verb of a gesture's mirror steps, which the
// owed rows name their step ids by (they must agree).
const MirrorStepVerb = trackapply.MirrorStepVerb
