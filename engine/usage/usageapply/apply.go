// Package usageapply is the usage domain's apply side: a day record
// replaces its object's rows (the node, the company day, the seat) with
// its whole value, and every day older than the newest day applied less
// usagerec.KeepDays leaves in the same transaction — on every node alike,
// with no sweep. Nothing here reads a clock: what is old is decided by
// the days the log carries, so every node applying the same records holds
// the same rows.
package usageapply

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// Domain is the usage domain as the replication framework drives it.
type Domain struct{}

var _ statelog.Domain = Domain{}

// Name is "usage".
func (Domain) Name() engine.Domain { return usagerec.Domain }

// Schema is the usage tables. usage_days holds one row an object, with
// the digest of the value it was applied from (what the publishing node
// compares its derivation with) and the sequence of that record.
func (Domain) Schema() string { return schema }

// Kinds is the domain's one record kind at its format version
// (usagerec.DayVersion: why 1 is safe is said there).
func (Domain) Kinds() map[string]int { return usagerec.Kinds }

// Tables are the domain's tables, children first.
var Tables = []string{"usage_tools", "usage_refusals", "usage_spend", "usage_days"}

const schema = `
CREATE TABLE IF NOT EXISTS usage_days (
	node      TEXT NOT NULL,
	day       TEXT NOT NULL,
	seat      TEXT NOT NULL,
	turns     INTEGER NOT NULL,
	durations TEXT NOT NULL,
	seats     INTEGER NOT NULL,
	through   INTEGER NOT NULL,
	digest    TEXT NOT NULL,
	version   INTEGER NOT NULL,
	PRIMARY KEY (node, day, seat)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_days_day ON usage_days(day);
CREATE TABLE IF NOT EXISTS usage_tools (
	node    TEXT NOT NULL,
	day     TEXT NOT NULL,
	seat    TEXT NOT NULL,
	tool    TEXT NOT NULL,
	outcome TEXT NOT NULL,
	n       INTEGER NOT NULL,
	PRIMARY KEY (node, day, seat, tool, outcome)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_tools_day ON usage_tools(day);
CREATE TABLE IF NOT EXISTS usage_refusals (
	node TEXT NOT NULL,
	day  TEXT NOT NULL,
	seat TEXT NOT NULL,
	code TEXT NOT NULL,
	n    INTEGER NOT NULL,
	PRIMARY KEY (node, day, seat, code)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_refusals_day ON usage_refusals(day);
CREATE TABLE IF NOT EXISTS usage_spend (
	node          TEXT NOT NULL,
	day           TEXT NOT NULL,
	seat          TEXT NOT NULL,
	model         TEXT NOT NULL,
	input_tokens  INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL,
	cost_micros   INTEGER NOT NULL,
	calls         INTEGER NOT NULL,
	PRIMARY KEY (node, day, seat, model)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS usage_spend_day ON usage_spend(day);
`

// Digest is the digest of a day's value as it is published: the node
// compares its derivation with the applied row's by it.
func Digest(d usagerec.Day) string {
	b, _ := json.Marshal(d)
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:16])
}

// Apply replaces a day record's object and takes every day the newest day
// makes old away. A record about a day already older than what is kept
// (a late copy from a node that was away) applies nothing.
func (Domain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	if rec.Kind != usagerec.KindDay {
		return nil // a kind this build does not know, at a version it claims to read
	}
	var d usagerec.Day
	if err := json.Unmarshal(rec.Payload, &d); err != nil {
		return nil // moot: a payload of a known kind this build cannot read
	}
	if _, ok := usagerec.ParseDay(d.Day); !ok || d.Node == "" {
		return nil
	}
	newest := d.Day
	var have sql.NullString
	if err := tx.QueryRowContext(ctx, `SELECT max(day) FROM usage_days`).Scan(&have); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if have.Valid && have.String > newest {
		newest = have.String
	}
	cutoff := usagerec.Cutoff(newest)
	for _, t := range Tables {
		if _, err := at.Exec(ctx, tx, `DELETE FROM `+t+` WHERE day < ?`, cutoff); err != nil {
			return err
		}
	}
	if d.Day < cutoff {
		return nil
	}
	return replace(ctx, tx, at, d)
}

// replace writes d as its object's rows, in place of what they were.
func replace(ctx context.Context, tx *sql.Tx, at statelog.Applying, d usagerec.Day) error {
	for _, t := range Tables {
		if _, err := at.Exec(ctx, tx, `DELETE FROM `+t+` WHERE node = ? AND day = ? AND seat = ?`, d.Node, d.Day, d.Seat); err != nil {
			return err
		}
	}
	durations, _ := json.Marshal(d.Durations)
	if d.Durations == nil {
		durations = []byte("[]")
	}
	if _, err := at.Exec(ctx, tx, `INSERT INTO usage_days(node, day, seat, turns, durations, seats, through, digest, version) VALUES(?,?,?,?,?,?,?,?,?)`,
		d.Node, d.Day, d.Seat, d.Turns, string(durations), d.Seats, throughNanos(d), Digest(d), at.Seq); err != nil {
		return err
	}
	for _, c := range d.Calls {
		if _, err := at.Exec(ctx, tx, `INSERT INTO usage_tools(node, day, seat, tool, outcome, n) VALUES(?,?,?,?,?,?)
			ON CONFLICT DO UPDATE SET n = n + excluded.n`, d.Node, d.Day, d.Seat, c.Tool, c.Outcome, c.N); err != nil {
			return err
		}
	}
	for _, r := range d.Refusals {
		if _, err := at.Exec(ctx, tx, `INSERT INTO usage_refusals(node, day, seat, code, n) VALUES(?,?,?,?,?)
			ON CONFLICT DO UPDATE SET n = n + excluded.n`, d.Node, d.Day, d.Seat, r.Code, r.N); err != nil {
			return err
		}
	}
	for _, s := range d.Spend {
		if _, err := at.Exec(ctx, tx, `INSERT INTO usage_spend(node, day, seat, model, input_tokens, output_tokens, cost_micros, calls) VALUES(?,?,?,?,?,?,?,?)
			ON CONFLICT DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
			cost_micros = cost_micros + excluded.cost_micros, calls = calls + excluded.calls`,
			d.Node, d.Day, d.Seat, s.Model, s.InputTokens, s.OutputTokens, s.CostMicros, s.Calls); err != nil {
			return err
		}
	}
	return nil
}

func throughNanos(d usagerec.Day) int64 {
	if d.Through.IsZero() {
		return 0
	}
	return d.Through.UnixNano()
}
