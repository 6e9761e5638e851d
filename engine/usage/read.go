package usage

import (
	"context"
	"database/sql"
	"encoding/json"
	"sort"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// DefaultDays is how many days a report spans when it names no range.
const DefaultDays = 14

// Query is what a usage report asks: a range of company days (inclusive)
// and, optionally, one seat, one tool or one node.
type Query struct {
	From, To string
	Seat     string
	Tool     string
	Node     string
}

// Report is the fleet's usage over a range of company days, from every
// node's days as this node has applied them. It is a replication answer:
// read at stale, weakening to consistent_prefix where this node cannot
// measure its lag on the usage log.
type Report struct {
	engine.ReadInfo
	Timezone string   `json:"timezone"`
	From     string   `json:"from"`
	To       string   `json:"to"`
	Coverage Coverage `json:"coverage"`
	Totals   Totals   `json:"totals"`
	// Days are every day of the range, oldest first (zeros on a day no
	// node served a call), each split by seat.
	Days []DayRow `json:"days"`
	// Seats are the seats served in the range, busiest first.
	Seats []SeatRow `json:"seats"`
	// Tools are the tools called in the range, busiest first.
	Tools []ToolRow `json:"tools"`
}

// Totals are the range's sums.
type Totals struct {
	Calls    int64 `json:"calls"`
	Refusals int64 `json:"refusals"`
	Turns    int64 `json:"turns"`
	// Durations is the calls' duration histogram: DurationBucketsMs
	// (milliseconds) are the buckets' upper bounds, one bucket past them.
	Durations         []int64          `json:"durations"`
	DurationBucketsMs []int64          `json:"duration_buckets_ms"`
	Spend             []usagerec.Spend `json:"spend"`
}

// DayRow is one day of the range.
type DayRow struct {
	Day      string    `json:"day"`
	Calls    int64     `json:"calls"`
	Refusals int64     `json:"refusals"`
	Turns    int64     `json:"turns"`
	Seats    []SeatDay `json:"seats"`
}

// SeatDay is one seat's calls on one day.
type SeatDay struct {
	Seat     string `json:"seat"`
	Calls    int64  `json:"calls"`
	Refusals int64  `json:"refusals"`
}

// SeatRow is one seat over the range.
type SeatRow struct {
	Seat      string              `json:"seat"`
	Calls     int64               `json:"calls"`
	Refusals  int64               `json:"refusals"`
	Turns     int64               `json:"turns"`
	ByCode    []usagerec.Refusals `json:"refusals_by_code"`
	Durations []int64             `json:"durations"`
	Spend     []usagerec.Spend    `json:"spend"`
	Tools     []ToolRow           `json:"tools"`
	byTool    map[string]*ToolRow
}

// ToolRow is one tool's calls by outcome.
type ToolRow struct {
	Tool     string           `json:"tool"`
	Calls    int64            `json:"calls"`
	Refusals int64            `json:"refusals"`
	Outcomes map[string]int64 `json:"outcomes"`
}

// Coverage says how much of the range the answer covers: every node that
// published a day in the usage history this node holds, the days of the
// range (through today, from its first day) it has a day object for, and
// the ones it has not — a node down all day, or one whose days have not
// reached this node yet. A gap is a number here, never a refusal.
type Coverage struct {
	Nodes []NodeCoverage `json:"nodes"`
	// NodeDays is the node-days covered, Expected those there could be,
	// Ratio the one over the other (1 with nothing expected).
	NodeDays int     `json:"node_days"`
	Expected int     `json:"expected"`
	Ratio    float64 `json:"ratio"`
}

// NodeCoverage is one node's days in the range.
type NodeCoverage struct {
	Node string `json:"node"`
	Days int    `json:"days"`
	// Missing are the range's days it published no day for (at most 31
	// listed, the newest).
	Missing []string `json:"missing"`
	// Through is the instant of the last call of its newest day.
	Through *time.Time `json:"through,omitempty"`
}

// maxRangeDays bounds a report's range: the history every node keeps.
const maxRangeDays = usagerec.KeepDays

// Usage reads the fleet's usage over q at the replication answers'
// level: stale, weakening to consistent_prefix.
func (s *Service) Usage(ctx context.Context, q Query) (Report, error) {
	today, _ := s.today()
	from, to, err := checkRange(q, today)
	if err != nil {
		return Report{}, err
	}
	out := Report{Timezone: s.location().String(), From: from, To: to}
	info, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.Stale}, func(ctx context.Context, tx *sql.Tx) error {
		return s.report(ctx, tx, q, today, &out)
	})
	if err != nil {
		return Report{}, err
	}
	if info.Lag == nil || info.Lag.Seconds == nil && info.Lag.Seq > 0 {
		info.Level, info.Lag = engine.ConsistentPrefix, nil
		info.Note = "This node cannot measure how far behind the usage log it is (no drain measured yet, or the log's end unread), so the answer claims no age: it is the usage as this node has applied it."
	}
	out.ReadInfo = info
	return out, nil
}

// checkRange reads q's range: YYYY-MM-DD days, from not after to, at
// most maxRangeDays; unset, the DefaultDays ending today.
func checkRange(q Query, today string) (string, string, error) {
	to := q.To
	if to == "" {
		to = today
	}
	tt, ok := usagerec.ParseDay(to)
	if !ok {
		return "", "", engine.Refuse(engine.CodeInvalidArgument, "to %q is not a day: write it YYYY-MM-DD (a day on the company's clock).", q.To).With("key", "to")
	}
	from := q.From
	if from == "" {
		from = tt.AddDate(0, 0, -(DefaultDays - 1)).Format(usagerec.DateLayout)
	}
	ft, ok := usagerec.ParseDay(from)
	if !ok {
		return "", "", engine.Refuse(engine.CodeInvalidArgument, "from %q is not a day: write it YYYY-MM-DD (a day on the company's clock).", q.From).With("key", "from")
	}
	if ft.After(tt) {
		return "", "", engine.Refuse(engine.CodeInvalidArgument, "from %s is after to %s; give the older day as from.", from, to).With("key", "from")
	}
	if n := int(tt.Sub(ft).Hours()/24) + 1; n > maxRangeDays {
		return "", "", engine.Refuse(engine.CodeInvalidArgument, "%s to %s is %d days; a report spans at most %d (the history every node keeps).", from, to, n, maxRangeDays).With("key", "from")
	}
	return from, to, nil
}

// report fills out from the rows in tx.
func (s *Service) report(ctx context.Context, tx *sql.Tx, q Query, today string, out *Report) error {
	days := map[string]*DayRow{}
	for d, _ := usagerec.ParseDay(out.From); d.Format(usagerec.DateLayout) <= out.To; d = d.AddDate(0, 0, 1) {
		k := d.Format(usagerec.DateLayout)
		days[k] = &DayRow{Day: k, Seats: []SeatDay{}}
		out.Days = append(out.Days, DayRow{})
	}
	seats, tools := map[string]*SeatRow{}, map[string]*ToolRow{}
	if err := s.readTools(ctx, tx, q, out, days, seats, tools); err != nil {
		return err
	}
	if err := s.readDays(ctx, tx, q, out, days, seats); err != nil {
		return err
	}
	if err := readRefusals(ctx, tx, q, out, seats); err != nil {
		return err
	}
	if err := readSpend(ctx, tx, q, out, seats); err != nil {
		return err
	}
	i := 0
	for d, _ := usagerec.ParseDay(out.From); d.Format(usagerec.DateLayout) <= out.To; d = d.AddDate(0, 0, 1) {
		row := days[d.Format(usagerec.DateLayout)]
		sort.Slice(row.Seats, func(a, b int) bool { return row.Seats[a].Seat < row.Seats[b].Seat })
		out.Days[i] = *row
		i++
	}
	finish(out, seats, tools)
	return s.readCoverage(ctx, tx, q, today, out)
}

// where is the filter every query of a report shares.
func where(q Query, out *Report) (string, []any) {
	w, args := ` WHERE day >= ? AND day <= ? AND seat != ''`, []any{out.From, out.To}
	if q.Seat != "" {
		w, args = w+` AND seat = ?`, append(args, q.Seat)
	}
	if q.Node != "" {
		w, args = w+` AND node = ?`, append(args, q.Node)
	}
	return w, args
}

func (s *Service) readTools(ctx context.Context, tx *sql.Tx, q Query, out *Report, days map[string]*DayRow, seats map[string]*SeatRow, tools map[string]*ToolRow) error {
	w, args := where(q, out)
	if q.Tool != "" {
		w, args = w+` AND tool = ?`, append(args, q.Tool)
	}
	rows, err := tx.QueryContext(ctx, `SELECT day, seat, tool, outcome, sum(n) FROM usage_tools`+w+` GROUP BY day, seat, tool, outcome`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var day, seat, tool, outcome string
		var n int64
		if err := rows.Scan(&day, &seat, &tool, &outcome, &n); err != nil {
			return err
		}
		ref := int64(0)
		if outcome == "refused" {
			ref = n
		}
		out.Totals.Calls += n
		out.Totals.Refusals += ref
		dr := days[day]
		dr.Calls += n
		dr.Refusals += ref
		sd := seatDay(dr, seat)
		sd.Calls += n
		sd.Refusals += ref
		sr := seatRow(seats, seat)
		sr.Calls += n
		sr.Refusals += ref
		addTool(sr.byTool, tool, outcome, n)
		addTool(tools, tool, outcome, n)
	}
	return rows.Err()
}

func seatDay(dr *DayRow, seat string) *SeatDay {
	for i := range dr.Seats {
		if dr.Seats[i].Seat == seat {
			return &dr.Seats[i]
		}
	}
	dr.Seats = append(dr.Seats, SeatDay{Seat: seat})
	return &dr.Seats[len(dr.Seats)-1]
}

func seatRow(seats map[string]*SeatRow, seat string) *SeatRow {
	sr := seats[seat]
	if sr == nil {
		sr = &SeatRow{Seat: seat, ByCode: []usagerec.Refusals{}, Spend: []usagerec.Spend{}, Tools: []ToolRow{},
			Durations: make([]int64, len(usagerec.DurationBucketsMs)+1), byTool: map[string]*ToolRow{}}
		seats[seat] = sr
	}
	return sr
}

func addTool(m map[string]*ToolRow, tool, outcome string, n int64) {
	t := m[tool]
	if t == nil {
		t = &ToolRow{Tool: tool, Outcomes: map[string]int64{}}
		m[tool] = t
	}
	t.Calls += n
	t.Outcomes[outcome] += n
	if outcome == "refused" {
		t.Refusals += n
	}
}

// readDays adds the turns and durations of every seat object.
func (s *Service) readDays(ctx context.Context, tx *sql.Tx, q Query, out *Report, days map[string]*DayRow, seats map[string]*SeatRow) error {
	w, args := where(q, out)
	rows, err := tx.QueryContext(ctx, `SELECT day, seat, turns, durations FROM usage_days`+w, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	out.Totals.Durations = make([]int64, len(usagerec.DurationBucketsMs)+1)
	out.Totals.DurationBucketsMs = usagerec.DurationBucketsMs
	for rows.Next() {
		var day, seat, dur string
		var turns int64
		if err := rows.Scan(&day, &seat, &turns, &dur); err != nil {
			return err
		}
		out.Totals.Turns += turns
		days[day].Turns += turns
		sr := seatRow(seats, seat)
		sr.Turns += turns
		var hist []int64
		if json.Unmarshal([]byte(dur), &hist) == nil && q.Tool == "" {
			for i := 0; i < len(hist) && i < len(sr.Durations); i++ {
				sr.Durations[i] += hist[i]
				out.Totals.Durations[i] += hist[i]
			}
		}
	}
	return rows.Err()
}

func readRefusals(ctx context.Context, tx *sql.Tx, q Query, out *Report, seats map[string]*SeatRow) error {
	if q.Tool != "" {
		return nil // refusals are counted by code per seat, not per tool
	}
	w, args := where(q, out)
	rows, err := tx.QueryContext(ctx, `SELECT seat, code, sum(n) FROM usage_refusals`+w+` GROUP BY seat, code ORDER BY seat, code`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r usagerec.Refusals
		var seat string
		if err := rows.Scan(&seat, &r.Code, &r.N); err != nil {
			return err
		}
		sr := seatRow(seats, seat)
		sr.ByCode = append(sr.ByCode, r)
	}
	return rows.Err()
}

func readSpend(ctx context.Context, tx *sql.Tx, q Query, out *Report, seats map[string]*SeatRow) error {
	out.Totals.Spend = []usagerec.Spend{}
	if q.Tool != "" {
		return nil // spend is reported per seat and model, not per tool
	}
	w, args := where(q, out)
	rows, err := tx.QueryContext(ctx, `SELECT seat, model, sum(input_tokens), sum(output_tokens), sum(cost_micros), sum(calls) FROM usage_spend`+w+` GROUP BY seat, model ORDER BY seat, model`, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	total := map[string]*usagerec.Spend{}
	var models []string
	for rows.Next() {
		var seat string
		var sp usagerec.Spend
		if err := rows.Scan(&seat, &sp.Model, &sp.InputTokens, &sp.OutputTokens, &sp.CostMicros, &sp.Calls); err != nil {
			return err
		}
		sr := seatRow(seats, seat)
		sr.Spend = append(sr.Spend, sp)
		t := total[sp.Model]
		if t == nil {
			t = &usagerec.Spend{Model: sp.Model}
			total[sp.Model] = t
			models = append(models, sp.Model)
		}
		t.InputTokens += sp.InputTokens
		t.OutputTokens += sp.OutputTokens
		t.CostMicros += sp.CostMicros
		t.Calls += sp.Calls
	}
	sort.Strings(models)
	for _, m := range models {
		out.Totals.Spend = append(out.Totals.Spend, *total[m])
	}
	return rows.Err()
}

// finish orders the seats and tools, busiest first.
func finish(out *Report, seats map[string]*SeatRow, tools map[string]*ToolRow) {
	out.Seats, out.Tools = []SeatRow{}, []ToolRow{}
	for _, sr := range seats {
		for _, t := range sr.byTool {
			sr.Tools = append(sr.Tools, *t)
		}
		sortTools(sr.Tools)
		out.Seats = append(out.Seats, *sr)
	}
	sort.Slice(out.Seats, func(i, j int) bool {
		a, b := out.Seats[i], out.Seats[j]
		return a.Calls > b.Calls || a.Calls == b.Calls && a.Seat < b.Seat
	})
	for _, t := range tools {
		out.Tools = append(out.Tools, *t)
	}
	sortTools(out.Tools)
}

func sortTools(ts []ToolRow) {
	sort.Slice(ts, func(i, j int) bool {
		return ts[i].Calls > ts[j].Calls || ts[i].Calls == ts[j].Calls && ts[i].Tool < ts[j].Tool
	})
}
