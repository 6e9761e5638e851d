package statelog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// A record this build cannot apply is retained, not dropped: the bytes
// are the only copy, and a rolling upgrade puts records on the wire the
// older half has never heard of (Replication › A record whose scope meets
// a deferred scope is deferred too). Retained are: a record at a format
// version this build does not read; one of a kind this build does not
// know; and one whose declared scope meets a retained record's scope, so
// an object's rows on every node stay a prefix of its own record
// sequence. A retained record moves its subject's arbitration anchor like
// any other (the anchor is the last record consumed, whatever it then
// did), and a build that reads it applies it at its next boot (release).

// retainedAs says whether a record was retained, and with what scope.
type retainedAs uint8

const (
	notRetained retainedAs = iota
	// retainedKnown: retained under the scope it declares.
	retainedKnown
	// retainedUnknown: retained with no scope anyone can read, which
	// defers the whole domain (deferred_scope_unknown).
	retainedUnknown
)

// count adds a record retained as h to the batch's counts.
func (h retainedAs) count(retained, unknown int) (int, int) {
	switch h {
	case retainedKnown:
		return retained + 1, unknown
	case retainedUnknown:
		return retained + 1, unknown + 1
	}
	return retained, unknown
}

// coverSet is the scopes of the retained records, as the batch being
// applied sees them: what committed, and what the batch retained itself.
type coverSet struct {
	scopes  map[string]bool
	unknown bool
}

func (c *coverSet) add(scope []string, known bool) {
	if !known {
		c.unknown = true
	}
	for _, s := range scope {
		c.scopes[s] = true
	}
}

// meets reports whether scope meets a retained record's: any of its
// entries held (or the container a membership entry names), or a
// retained record whose scope nobody could read.
func (c *coverSet) meets(scope []string) bool {
	if c.unknown {
		return true
	}
	for _, s := range scope {
		if m := memberOf(s); c.scopes[s] || (m != "" && c.scopes[m]) {
			return true
		}
	}
	return false
}

// MemberPrefix marks a scope entry naming a container an object is in
// rather than one the record changes: "in:project:ENG" on a work item's
// record. A retained record that changes the container ("project:ENG", a
// bulk update) covers every later record and read about what is in it;
// one that only declares membership covers nothing of its neighbours'.
const MemberPrefix = "in:"

// memberOf is the container a membership entry names, "" for any other.
func memberOf(entry string) string {
	if c, ok := strings.CutPrefix(entry, MemberPrefix); ok {
		return c
	}
	return ""
}

// scopeMeets reports whether a retained record's entry held meets the
// entry e of a later record or a read: the same entry, or e is
// membership of the container held names.
func scopeMeets(held, e string) bool { return held == e || (held != "" && memberOf(e) == held) }

// retainIfHeld retains the record d where this build cannot apply it:
// decErr says it would not decode, or its kind is one this build does
// not know, or its scope meets a retained record's. A gate record this
// build cannot decode stops the applier instead: deferring an eviction
// or a purge would go on applying what it was to drop.
func (r *Replica) retainIfHeld(ctx context.Context, tx *sql.Tx, d Delivery, rec *record.Record, decErr error) (retainedAs, error) {
	if decErr != nil {
		var ue *record.UndecodableError
		if !errors.As(decErr, &ue) {
			return notRetained, decErr
		}
		if ue.Kind != "" && r.isGateKind(ue.Kind) {
			return notRetained, &StopError{Seq: d.Seq, Why: fmt.Sprintf("a gate this build cannot read: record %d of %s installs a gate (%s) in a format this build does not read (%v); a build that reads it resumes this applier at its next boot",
				d.Seq, r.stream, ue.Kind, decErr)}
		}
		return r.retain(ctx, tx, d, ue.Scope, ue.ScopeKnown)
	}
	if _, known := r.kindVersion(rec.Kind); !known {
		return r.retain(ctx, tx, d, rec.Scope, rec.Scope != nil)
	}
	covered, err := r.covered(ctx, tx, rec.Scope)
	if err != nil || !covered {
		return notRetained, err
	}
	return r.retain(ctx, tx, d, rec.Scope, rec.Scope != nil)
}

// retain keeps d's bytes in statelog_retained under scope, moves its
// subject's anchor, and adds its scope to what the rest of the batch is
// held against.
func (r *Replica) retain(ctx context.Context, tx *sql.Tx, d Delivery, scope []string, known bool) (retainedAs, error) {
	if scope == nil {
		scope = []string{}
	}
	text, _ := json.Marshal(scope)
	if _, err := tx.ExecContext(ctx, `INSERT INTO statelog_retained(domain, seq, scope, scope_known, data, stored_at) VALUES(?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
		string(r.domain), d.Seq, string(text), known, d.Data, d.Time.UnixNano()); err != nil {
		return notRetained, err
	}
	r.anchors.move(d.Subject, d.Seq)
	r.alarms.retainedAt(d.Seq, d.Time)
	if err := r.loadCover(ctx, tx); err != nil {
		return notRetained, err
	}
	r.cover.add(scope, known)
	if !known {
		return retainedUnknown, nil
	}
	return retainedKnown, nil
}

// covered reports whether scope meets a retained record's scope, reading
// the retained scopes once a batch and only where there are some.
func (r *Replica) covered(ctx context.Context, tx *sql.Tx, scope []string) (bool, error) {
	if r.cover == nil && r.retained.Load() == 0 {
		return false, nil
	}
	if err := r.loadCover(ctx, tx); err != nil {
		return false, err
	}
	return r.cover.meets(scope), nil
}

// loadCover reads the committed retained scopes into the batch's cover,
// once a batch.
func (r *Replica) loadCover(ctx context.Context, tx *sql.Tx) error {
	if r.cover != nil {
		return nil
	}
	held, err := r.retainedIn(ctx, tx)
	if err != nil {
		return err
	}
	r.cover = &coverSet{scopes: map[string]bool{}}
	for _, h := range held {
		r.cover.add(h.scope, h.scopeKnown)
	}
	return nil
}

// retainedRow is one row of statelog_retained as the release reads it.
type retainedRow struct {
	seq      uint64
	data     []byte
	storedAt int64
}

// release applies, at boot and before the applier consumes anything new,
// every retained record this build can now apply, in log order, each in
// the transaction that deletes its row. A record still past this build,
// or one whose scope meets such a record's, stays retained with
// everything it covers. applied_through then stands below the first
// record still retained, or at the checkpoint when none is.
func (r *Replica) release(ctx context.Context, cp Checkpoint) (Checkpoint, error) {
	rows, err := r.retainedRows(ctx)
	if err != nil {
		return cp, err
	}
	still := &coverSet{scopes: map[string]bool{}}
	var first uint64 // the first record still retained
	released := 0
	for _, row := range rows {
		rec, decErr := record.DecodeUpTo(row.data, r.format)
		known := false
		if decErr == nil {
			_, known = r.kindVersion(rec.Kind)
		}
		if decErr != nil || !known || still.meets(rec.Scope) {
			if first == 0 {
				first = row.seq
			}
			var ue *record.UndecodableError
			if errors.As(decErr, &ue) {
				still.add(ue.Scope, ue.ScopeKnown)
			} else if rec != nil {
				still.add(rec.Scope, rec.Scope != nil)
			}
			continue
		}
		through := cp.Seq
		if first != 0 {
			through = first - 1
		}
		if err := r.releaseOne(ctx, cp, row, rec, through); err != nil {
			return cp, err
		}
		released++
	}
	if first != 0 {
		cp.AppliedThrough = first - 1
	} else {
		cp.AppliedThrough = cp.Seq
	}
	if released > 0 {
		r.log.Info(EvReleased, engine.LogStream, r.stream, "released", released, "still_retained", len(rows)-released,
			"applied_through", r.Position(cp.AppliedThrough).Token())
	}
	return cp, nil
}

// EvReleased is the line a boot writes when it applied records an older
// build retained.
const EvReleased = "statelog_retained_released"

// retainedRows reads the domain's retained records in log order.
func (r *Replica) retainedRows(ctx context.Context) ([]retainedRow, error) {
	q, err := r.cfg.DB.QueryContext(ctx, `SELECT seq, data, stored_at FROM statelog_retained WHERE domain = ? ORDER BY seq`, string(r.domain))
	if err != nil {
		return nil, err
	}
	defer q.Close()
	var out []retainedRow
	for q.Next() {
		var row retainedRow
		if err := q.Scan(&row.seq, &row.data, &row.storedAt); err != nil {
			return nil, err
		}
		out = append(out, row)
	}
	return out, q.Err()
}

// releaseOne applies one retained record and deletes its row in one
// transaction, with applied_through moved to through; the checkpoint and
// the anchors stay where the record's consumption put them.
func (r *Replica) releaseOne(ctx context.Context, cp Checkpoint, row retainedRow, rec *record.Record, through uint64) error {
	at := time.Unix(0, row.storedAt).UTC()
	if row.storedAt == 0 {
		// Retained by a build that kept no instant: the log has it.
		if m, err := r.cfg.Log.Get(ctx, row.seq); err == nil {
			at = m.Time
		}
	}
	d := Delivery{StoredMsg: StoredMsg{Seq: row.seq, Subject: rec.Subject, MsgID: rec.OpID, Data: row.data, Time: at}}
	tx, err := sqlite.BeginWrite(ctx, r.cfg.DB)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	r.bound = sqlite.NewBound(tx)
	defer func() { r.bound = nil }()
	clear(r.anchors)
	r.ledger.reset()
	r.observers.reset()
	r.landed.reset()
	r.answers.reset()
	r.held, r.cover = nil, nil
	q := sqlite.Cached{Tx: tx, S: r.stmts, B: r.bound}
	if err := r.ledger.ask(ctx, q, []Delivery{d}, row.seq-1); err != nil {
		return err
	}
	rows := 0
	g, err := r.applyDecoded(ctx, tx, d, rec, &rows)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM statelog_retained WHERE domain = ? AND seq = ?`, string(r.domain), row.seq); err != nil {
		return err
	}
	var gated []gatedLine
	if g != nil {
		gated = append(gated, *g)
	}
	cp.AppliedThrough = through
	unknown := 0
	if rec.Scope == nil {
		unknown = -1
	}
	return r.commitBatch(ctx, tx, cp, -1, unknown, gated)
}

// coveredWrite refuses a write whose record would be retained here: its
// scope meets a retained record's, so it would be decided against rows
// that miss what the log holds for its object (deferred), or a retained
// record's scope is unreadable and covers the whole domain
// (deferred_scope_unknown).
func (r *Replica) coveredWrite(ctx context.Context, scope []string) error {
	if r.retained.Load() == 0 {
		return nil
	}
	if r.scopeUnknown.Load() > 0 {
		return scopeUnknownRefusal(r.scopeUnknown.Load(), r.stream)
	}
	tx, err := sqlite.BeginRead(ctx, r.cfg.DB)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	held, err := r.retainedIn(ctx, tx)
	if err != nil {
		return err
	}
	if d := deferredFor(r, held, scope); d != nil {
		d.Message = fmt.Sprintf("this node holds %d record(s) from %s it cannot apply yet covering %s, so a write about them would be decided against rows that miss what the log holds; nothing was written. Send the write to an upgraded node, or finish the rolling upgrade (this node applies them at its next boot on a build that reads them).",
			d.Fields["records"], d.Position.Token(), scopeList(d.Fields["scope"]))
		return d
	}
	return nil
}

// scopeList renders a refusal's scope field for its sentence.
func scopeList(v any) string {
	s, _ := v.([]string)
	s = slices.Clone(s)
	slices.Sort(s)
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}

// addRetainedStoredAt gives a statelog_retained made by an older build
// the column the release reads a record's instant from.
func addRetainedStoredAt(ctx context.Context, tx *sql.Tx) error {
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('statelog_retained') WHERE name = 'stored_at'`).Scan(&n); err != nil || n > 0 {
		return err
	}
	_, err := tx.ExecContext(ctx, `ALTER TABLE statelog_retained ADD COLUMN stored_at INTEGER NOT NULL DEFAULT 0`)
	return err
}
