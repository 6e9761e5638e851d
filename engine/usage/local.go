package usage

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// LocalFile is the node's own record of what its surfaces served, in
// its data directory beside the replicated database: never replicated,
// never in a snapshot (an adopter keeps its own), read back only by this
// node to derive its days.
const LocalFile = "crewlet-usage-local.db"

// LocalKeepDays is how many company days the local record keeps: every
// start re-derives each of them, so a node down for up to a week still
// publishes the days it was down across.
const LocalKeepDays = 8

const localSchema = `
CREATE TABLE IF NOT EXISTS local_calls (
	day TEXT NOT NULL, seat TEXT NOT NULL, tool TEXT NOT NULL, outcome TEXT NOT NULL, n INTEGER NOT NULL,
	PRIMARY KEY (day, seat, tool, outcome)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS local_refusals (
	day TEXT NOT NULL, seat TEXT NOT NULL, code TEXT NOT NULL, n INTEGER NOT NULL,
	PRIMARY KEY (day, seat, code)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS local_units (
	day TEXT NOT NULL, seat TEXT NOT NULL, unit TEXT NOT NULL,
	PRIMARY KEY (day, seat, unit)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS local_durations (
	day TEXT NOT NULL, seat TEXT NOT NULL, bucket INTEGER NOT NULL, n INTEGER NOT NULL,
	PRIMARY KEY (day, seat, bucket)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS local_spend (
	day TEXT NOT NULL, seat TEXT NOT NULL, model TEXT NOT NULL, input_tokens INTEGER NOT NULL,
	output_tokens INTEGER NOT NULL, cost_micros INTEGER NOT NULL, calls INTEGER NOT NULL,
	PRIMARY KEY (day, seat, model)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS local_last (
	day TEXT NOT NULL, seat TEXT NOT NULL, at INTEGER NOT NULL,
	PRIMARY KEY (day, seat)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS local_days (
	day TEXT PRIMARY KEY) WITHOUT ROWID;
`

var localTables = []string{"local_calls", "local_refusals", "local_units", "local_durations", "local_spend", "local_last", "local_days"}

// openLocal opens (creating) the node's local record.
func openLocal(dir string, busy int) (*sql.DB, error) {
	db, err := sqlite.Open(filepath.Join(dir, LocalFile), busy)
	if err != nil {
		return nil, fmt.Errorf("usage: open the local record: %w", err)
	}
	if _, err := db.Exec(localSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("usage: the local record's schema: %w", err)
	}
	return db, nil
}

// counted is one call as the local record adds it up: on its company
// day.
type counted struct {
	Call
	day string
}

// writeLocal adds calls to the local record in one transaction, marks
// the days in days as days this node ran, and takes away the days older
// than LocalKeepDays before oldest. The calls are added up in memory
// first, one upsert per distinct row: a flush holds every call of the
// last second, and four statements per call were a twelfth of the CPU a
// node spent serving tool calls at full rate.
func writeLocal(ctx context.Context, db *sql.DB, calls []counted, days []string, keepFrom string) error {
	sum := sumCalls(calls, days)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := sum.write(ctx, tx); err != nil {
		return err
	}
	if keepFrom != "" {
		for _, t := range localTables {
			if _, err := tx.ExecContext(ctx, `DELETE FROM `+t+` WHERE day < ?`, keepFrom); err != nil {
				return err
			}
		}
	}
	return tx.Commit()
}

// The keys of the rows a flush adds to.
type (
	daySeat     struct{ day, seat string }
	callKey     struct{ day, seat, tool, outcome string }
	refusalKey  struct{ day, seat, code string }
	unitKey     struct{ day, seat, unit string }
	durationKey struct {
		day, seat string
		bucket    int
	}
	spendKey struct{ day, seat, model string }
)

// spendSum is one (day, seat, model)'s spend added up.
type spendSum struct{ in, out, cost, calls int64 }

// localSum is a flush's calls added up by the rows they add to.
type localSum struct {
	calls     map[callKey]int64
	refusals  map[refusalKey]int64
	units     map[unitKey]bool
	durations map[durationKey]int64
	spend     map[spendKey]*spendSum
	last      map[daySeat]int64
	days      map[string]bool
}

// sumCalls adds calls up, with days marked as days this node ran.
func sumCalls(calls []counted, days []string) localSum {
	s := localSum{calls: map[callKey]int64{}, refusals: map[refusalKey]int64{}, units: map[unitKey]bool{},
		durations: map[durationKey]int64{}, spend: map[spendKey]*spendSum{}, last: map[daySeat]int64{}, days: map[string]bool{}}
	for _, d := range days {
		s.days[d] = true
	}
	for _, c := range calls {
		s.days[c.day] = true
		s.calls[callKey{c.day, c.Seat, c.Tool, c.Outcome}]++
		s.durations[durationKey{c.day, c.Seat, usagerec.Bucket(c.Took)}]++
		ds := daySeat{c.day, c.Seat}
		if at, ok := s.last[ds]; !ok || c.At.UnixNano() > at {
			s.last[ds] = c.At.UnixNano()
		}
		if c.Code != "" {
			s.refusals[refusalKey{c.day, c.Seat, c.Code}]++
		}
		if c.Unit != "" {
			s.units[unitKey{c.day, c.Seat, c.Unit}] = true
		}
		for _, sp := range c.Spend {
			k := spendKey{c.day, c.Seat, sp.Model}
			v := s.spend[k]
			if v == nil {
				v = &spendSum{}
				s.spend[k] = v
			}
			v.in += sp.InputTokens
			v.out += sp.OutputTokens
			v.cost += sp.CostMicros
			v.calls++
		}
	}
	return s
}

// write adds the sums to the local record's rows inside tx.
func (s localSum) write(ctx context.Context, tx *sql.Tx) error {
	exec := func(q string, args ...any) error {
		_, err := tx.ExecContext(ctx, q, args...)
		return err
	}
	for k, n := range s.calls {
		if err := exec(`INSERT INTO local_calls(day, seat, tool, outcome, n) VALUES(?,?,?,?,?) ON CONFLICT DO UPDATE SET n = n + excluded.n`, k.day, k.seat, k.tool, k.outcome, n); err != nil {
			return err
		}
	}
	for k, n := range s.durations {
		if err := exec(`INSERT INTO local_durations(day, seat, bucket, n) VALUES(?,?,?,?) ON CONFLICT DO UPDATE SET n = n + excluded.n`, k.day, k.seat, k.bucket, n); err != nil {
			return err
		}
	}
	for k, at := range s.last {
		if err := exec(`INSERT INTO local_last(day, seat, at) VALUES(?,?,?) ON CONFLICT DO UPDATE SET at = max(at, excluded.at)`, k.day, k.seat, at); err != nil {
			return err
		}
	}
	for d := range s.days {
		if err := exec(`INSERT INTO local_days(day) VALUES(?) ON CONFLICT DO NOTHING`, d); err != nil {
			return err
		}
	}
	for k, n := range s.refusals {
		if err := exec(`INSERT INTO local_refusals(day, seat, code, n) VALUES(?,?,?,?) ON CONFLICT DO UPDATE SET n = n + excluded.n`, k.day, k.seat, k.code, n); err != nil {
			return err
		}
	}
	for k := range s.units {
		if err := exec(`INSERT INTO local_units(day, seat, unit) VALUES(?,?,?) ON CONFLICT DO NOTHING`, k.day, k.seat, k.unit); err != nil {
			return err
		}
	}
	for k, v := range s.spend {
		if err := exec(`INSERT INTO local_spend(day, seat, model, input_tokens, output_tokens, cost_micros, calls) VALUES(?,?,?,?,?,?,?)
			ON CONFLICT DO UPDATE SET input_tokens = input_tokens + excluded.input_tokens, output_tokens = output_tokens + excluded.output_tokens,
			cost_micros = cost_micros + excluded.cost_micros, calls = calls + excluded.calls`, k.day, k.seat, k.model, v.in, v.out, v.cost, v.calls); err != nil {
			return err
		}
	}
	return nil
}

// localDays are the days the local record holds, oldest first.
func localDays(ctx context.Context, db *sql.DB) ([]string, error) {
	return sqlite.Strings(ctx, db, `SELECT day FROM local_days ORDER BY day`)
}

// derive is every object of node's day from the local record: one per
// seat it served, and the node's own (NodeSeat), in seat order.
func derive(ctx context.Context, db *sql.DB, node, day string) ([]usagerec.Day, error) {
	byseat := map[string]*usagerec.Day{}
	get := func(seat string) *usagerec.Day {
		d := byseat[seat]
		if d == nil {
			d = &usagerec.Day{Node: node, Day: day, Seat: seat}
			byseat[seat] = d
		}
		return d
	}
	err := each(ctx, db, `SELECT seat, tool, outcome, n FROM local_calls WHERE day = ? ORDER BY seat, tool, outcome`, day, func(r *sql.Rows) error {
		var seat string
		var c usagerec.ToolCalls
		if err := r.Scan(&seat, &c.Tool, &c.Outcome, &c.N); err != nil {
			return err
		}
		get(seat).Calls = append(get(seat).Calls, c)
		return nil
	})
	if err == nil {
		err = each(ctx, db, `SELECT seat, code, n FROM local_refusals WHERE day = ? ORDER BY seat, code`, day, func(r *sql.Rows) error {
			var seat string
			var c usagerec.Refusals
			if err := r.Scan(&seat, &c.Code, &c.N); err != nil {
				return err
			}
			get(seat).Refusals = append(get(seat).Refusals, c)
			return nil
		})
	}
	if err == nil {
		err = deriveRest(ctx, db, day, get)
	}
	if err != nil {
		return nil, err
	}
	seats := make([]string, 0, len(byseat))
	for s := range byseat {
		seats = append(seats, s)
	}
	sort.Strings(seats)
	out := []usagerec.Day{{Node: node, Day: day, Seat: usagerec.NodeSeat, Seats: int64(len(seats))}}
	for _, s := range seats {
		d := byseat[s]
		if d.Through.After(out[0].Through) {
			out[0].Through = d.Through
		}
		out = append(out, *d)
	}
	return out, nil
}

// deriveRest adds the turns, durations, spend and last instant of day.
func deriveRest(ctx context.Context, db *sql.DB, day string, get func(string) *usagerec.Day) error {
	err := each(ctx, db, `SELECT seat, count(*) FROM local_units WHERE day = ? GROUP BY seat`, day, func(r *sql.Rows) error {
		var seat string
		var n int64
		if err := r.Scan(&seat, &n); err != nil {
			return err
		}
		get(seat).Turns = n
		return nil
	})
	if err != nil {
		return err
	}
	err = each(ctx, db, `SELECT seat, bucket, n FROM local_durations WHERE day = ? ORDER BY seat, bucket`, day, func(r *sql.Rows) error {
		var seat string
		var b int
		var n int64
		if err := r.Scan(&seat, &b, &n); err != nil {
			return err
		}
		d := get(seat)
		if d.Durations == nil {
			d.Durations = make([]int64, len(usagerec.DurationBucketsMs)+1)
		}
		if b >= 0 && b < len(d.Durations) {
			d.Durations[b] += n
		}
		return nil
	})
	if err != nil {
		return err
	}
	err = each(ctx, db, `SELECT seat, model, input_tokens, output_tokens, cost_micros, calls FROM local_spend WHERE day = ? ORDER BY seat, model`, day, func(r *sql.Rows) error {
		var seat string
		var s usagerec.Spend
		if err := r.Scan(&seat, &s.Model, &s.InputTokens, &s.OutputTokens, &s.CostMicros, &s.Calls); err != nil {
			return err
		}
		get(seat).Spend = append(get(seat).Spend, s)
		return nil
	})
	if err != nil {
		return err
	}
	return each(ctx, db, `SELECT seat, at FROM local_last WHERE day = ?`, day, func(r *sql.Rows) error {
		var seat string
		var at int64
		if err := r.Scan(&seat, &at); err != nil {
			return err
		}
		get(seat).Through = time.Unix(0, at).UTC()
		return nil
	})
}

func each(ctx context.Context, db *sql.DB, q, day string, fn func(*sql.Rows) error) error {
	rows, err := db.QueryContext(ctx, q, day)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	return rows.Err()
}
