package statelog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
)

// A generation is one history of a domain's log as this node's rows
// follow it. Every record names the generation it was decided in; a
// reanchor (reanchor.go) opens the next one when the log itself changed
// under the fleet (a recreated stream, a restored broker, a generation
// only an evicted peer held), and says so on the log with a generation
// record, which stays at format version 1 for good: an older node that
// retained it would never make the transition it announces.

// KindGeneration is the framework's record of a reanchor: the generation
// it opened and how.
const KindGeneration = "statelog.generation"

// GenerationSubject is the subject a domain's generation records go on.
func GenerationSubject(d engine.Domain) string { return SubjectPrefix(d) + "gate.generation" }

// generationScope is the scope a generation record declares.
const generationScope = "generation"

// Generation is one generation of a domain's log as a reanchor opened it:
// the payload of its generation record and a row of statelog_generations.
type Generation struct {
	Generation      uint64    `json:"generation"`
	FromGeneration  uint64    `json:"from_generation"`
	Case            string    `json:"case"`
	Cursor          uint64    `json:"cursor"`
	StreamCreatedAt time.Time `json:"stream_created_at"`
	// RecordSeq is where its generation record landed (0 until this node
	// applied it).
	RecordSeq uint64 `json:"-"`
}

// generationsSchema keeps the generations this node's rows entered.
const generationsSchema = `
CREATE TABLE IF NOT EXISTS statelog_generations (
	domain            TEXT NOT NULL,
	generation        INTEGER NOT NULL,
	from_generation   INTEGER NOT NULL,
	kase              TEXT NOT NULL,
	cursor            INTEGER NOT NULL,
	stream_created_at INTEGER NOT NULL,
	record_seq        INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (domain, generation)
) WITHOUT ROWID;
`

// generations is what the applier and the write path know of this
// domain's generations: the current one, and the ones reanchors opened.
type generations struct {
	mu      sync.Mutex
	current uint64
	opened  []Generation
	// dirty says a batch that changed them failed: read them again.
	dirty bool
}

func (g *generations) get() (uint64, []Generation) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.current, g.opened
}

// generation is the generation this node's rows are in: the one its
// writes are decided in and its positions name.
func (r *Replica) generation() uint64 {
	cur, _ := r.gens.get()
	if cur == 0 {
		return r.cfg.Generation
	}
	return cur
}

// loadGenerations reads the generations from the rows: the checkpoint's,
// and the ones reanchors opened.
func (r *Replica) loadGenerations(ctx context.Context, q Reader) error {
	var current uint64
	if err := q.QueryRowContext(ctx, `SELECT generation FROM statelog_checkpoint WHERE domain = ?`, string(r.domain)).Scan(&current); err != nil && err != sql.ErrNoRows {
		return err
	}
	rows, err := q.QueryContext(ctx, `SELECT generation, from_generation, kase, cursor, stream_created_at, record_seq FROM statelog_generations WHERE domain = ? ORDER BY generation`, string(r.domain))
	if err != nil {
		return err
	}
	defer rows.Close()
	var opened []Generation
	for rows.Next() {
		var g Generation
		var created int64
		if err := rows.Scan(&g.Generation, &g.FromGeneration, &g.Case, &g.Cursor, &created, &g.RecordSeq); err != nil {
			return err
		}
		g.StreamCreatedAt = time.Unix(0, created).UTC()
		opened = append(opened, g)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	r.gens.mu.Lock()
	r.gens.current, r.gens.opened, r.gens.dirty = max(current, r.cfg.Generation, 1), opened, false
	r.gens.mu.Unlock()
	return nil
}

// reloadIfDirty reads the generations again where a batch that changed
// them may not have committed.
func (r *Replica) reloadIfDirty(ctx context.Context) error {
	r.gens.mu.Lock()
	dirty := r.gens.dirty
	r.gens.mu.Unlock()
	if !dirty {
		return nil
	}
	return r.loadGenerations(ctx, r.cfg.DB)
}

// abandoned reports whether generation g is one a reanchor skipped: one
// strictly between the generation it left and the one it opened.
func abandoned(opened []Generation, g uint64) bool {
	for _, o := range opened {
		if g > o.FromGeneration && g < o.Generation {
			return true
		}
	}
	return false
}

// overtakenAt reports whether a record written in generation g at seq
// came after the generation record of a later generation: a node wrote it
// in the old generation before it learned of the move.
func overtakenAt(opened []Generation, g, seq uint64) bool {
	for _, o := range opened {
		if g < o.Generation && o.RecordSeq > 0 && seq > o.RecordSeq {
			return true
		}
	}
	return false
}

// generationGate is the framework's two gates that a reanchor adds,
// asked before every other: abandoned, then overtaken.
type generationGate struct {
	r    *Replica
	name string
}

// The framework's gate words on statelog_record_gated.
const (
	GateAbandoned = "abandoned"
	GateOvertaken = "overtaken"
)

func (g generationGate) Name() string { return g.name }

func (g generationGate) Holds(_ context.Context, _ Reader, rec *record.Record, seq uint64) (bool, error) {
	if rec.Kind == KindGeneration {
		return false, nil
	}
	_, opened := g.r.gens.get()
	if g.name == GateAbandoned {
		return abandoned(opened, rec.Generation), nil
	}
	return overtakenAt(opened, rec.Generation, seq), nil
}

// checkGeneration stops the applier on a record decided in a generation
// this node never entered: it follows another history than this node's
// rows (a peer re-anchored the log past this node).
func (r *Replica) checkGeneration(rec *record.Record, seq uint64) error {
	cur, _ := r.gens.get()
	if rec.Kind == KindGeneration || rec.Generation <= max(cur, r.cfg.Generation) {
		return nil
	}
	r.strange.Store(&strangeRecord{generation: rec.Generation, writer: rec.Writer, seq: seq})
	return &StopError{Seq: seq, Why: fmt.Sprintf("record %d of %s was written in generation %d, which this node never entered (it is at %d): a peer re-anchored the log; this node adopts a snapshot from the new generation, or, where only an evicted peer held it, re-anchors it abandoned",
		seq, r.stream, rec.Generation, cur)}
}

// applyGeneration applies a generation record. The node that opened the
// generation notes where its record landed; a node following the same
// log in the generation it left enters it where the reanchor was an
// abandonment (the log itself is the same history); any other reanchor
// was made over a log this node cannot follow, and stops its applier.
func applyGeneration(r *Replica, ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64) error {
	var g Generation
	if err := json.Unmarshal(rec.Payload, &g); err != nil || g.Generation == 0 {
		return nil // moot: names no generation
	}
	cur, _ := r.gens.get()
	switch {
	case g.Generation == cur:
		if _, err := tx.ExecContext(ctx, `UPDATE statelog_generations SET record_seq = ? WHERE domain = ? AND generation = ? AND record_seq = 0`, seq, string(r.domain), g.Generation); err != nil {
			return err
		}
	case g.Generation > cur && g.FromGeneration <= cur && g.Case == ReanchorAbandoned:
		g.RecordSeq = seq
		if err := insertGeneration(ctx, tx, r.domain, g); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE statelog_checkpoint SET generation = ? WHERE domain = ?`, g.Generation, string(r.domain)); err != nil {
			return err
		}
	case g.Generation > cur:
		return &StopError{Seq: seq, Why: fmt.Sprintf("a peer re-anchored %s into generation %d (%s) past this node's %d: this node adopts a snapshot from the new generation",
			r.stream, g.Generation, g.Case, cur)}
	default:
		return nil // an older generation's record
	}
	// The gates after it in this batch see it at once; a batch that fails
	// reads the generations again (dirty).
	r.gens.mu.Lock()
	defer r.gens.mu.Unlock()
	r.gens.dirty = true
	if g.Generation > r.gens.current {
		r.gens.current = g.Generation
		r.gens.opened = append(r.gens.opened, g)
		return nil
	}
	for i := range r.gens.opened {
		if r.gens.opened[i].Generation == g.Generation && r.gens.opened[i].RecordSeq == 0 {
			r.gens.opened[i].RecordSeq = seq
		}
	}
	return nil
}

func insertGeneration(ctx context.Context, tx *sql.Tx, d engine.Domain, g Generation) error {
	_, err := tx.ExecContext(ctx, `INSERT INTO statelog_generations(domain, generation, from_generation, kase, cursor, stream_created_at, record_seq)
		VALUES(?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`, string(d), g.Generation, g.FromGeneration, g.Case, g.Cursor, g.StreamCreatedAt.UnixNano(), g.RecordSeq)
	return err
}
