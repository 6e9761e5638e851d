package statelog

import (
	"context"
	"database/sql"
	"errors"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// MaxTxRows bounds the rows one apply transaction writes: a bulk update
// commits in transactions of at most this many rows (a record is never
// split), so another domain's applier waits behind at most one of them.
const MaxTxRows = 4000

// DerivedDomain is a Domain with computed columns: values the apply
// maintains from the history the rows hold (the tracker's reopens, a
// project's active count, updated_at, hand-off counts). RulesVersion names
// the rules that compute them; when the version stored with the rows
// differs, the next boot calls Rederive once, before anything new is
// applied, in the transaction that stores the new version.
type DerivedDomain interface {
	Domain
	RulesVersion() int
	// Rederive recomputes every computed column from the rows and says how
	// many rows it wrote.
	Rederive(ctx context.Context, tx *sql.Tx) (rows int64, err error)
}

const rulesSchema = `
CREATE TABLE IF NOT EXISTS statelog_rules (
	domain  TEXT PRIMARY KEY,
	version INTEGER NOT NULL
) WITHOUT ROWID;
`

// rederive recomputes the domain's computed columns when the rules the
// rows were derived under are not this build's, logging statelog_rederived.
func (r *Replica) rederive(ctx context.Context) error { return r.rederiveWhy(ctx, "") }

// rederiveNow recomputes the domain's computed columns from the rows it
// holds, whatever rules they were derived under: after a checkpoint a
// reanchor created, the history the rows were derived from is not the
// log's any more (Replication › Values the engine computes are recomputed
// once).
func (r *Replica) rederiveNow(ctx context.Context) error {
	return r.rederiveWhy(ctx, "a checkpoint a reanchor created")
}

// rederiveWhy is both: with no why, only where the rules changed; with
// one, always, saying why in the line.
func (r *Replica) rederiveWhy(ctx context.Context, why string) error {
	dd, ok := r.cfg.Domain.(DerivedDomain)
	if !ok {
		return nil
	}
	tx, err := sqlite.BeginWrite(ctx, r.cfg.DB)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, rulesSchema); err != nil {
		return err
	}
	var from int
	err = tx.QueryRowContext(ctx, `SELECT version FROM statelog_rules WHERE domain = ?`, string(r.domain)).Scan(&from)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	to := dd.RulesVersion()
	if from == to && why == "" {
		return nil
	}
	rows, err := dd.Rederive(ctx, tx)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO statelog_rules(domain, version) VALUES(?, ?)
		ON CONFLICT(domain) DO UPDATE SET version = excluded.version`, string(r.domain), to); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	attrs := []any{"from", from, "to", to, "rows", rows}
	if why != "" {
		attrs = append(attrs, "why", why)
	}
	r.log.Info(engine.EvRederived, attrs...)
	return nil
}
