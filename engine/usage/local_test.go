package usage

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// TestLocalRecordAddsUpPerRow: calls written in two flushes, added up in
// memory by the rows they add to, leave each row as one call at a time
// would: the counts, the duration buckets, the newest instant per seat,
// the refusals by code, the units once each and the spend summed.
func TestLocalRecordAddsUpPerRow(t *testing.T) {
	ctx := context.Background()
	db, err := openLocal(t.TempDir(), 5)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	t0 := time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC)
	var all []counted
	for flush := range 2 {
		var calls []counted
		for i := range 50 {
			c := Call{At: t0.Add(time.Duration(flush*100+i) * time.Second), Seat: fmt.Sprintf("seat-%d", i%3), Tool: []string{"get_work_item", "create_work_item"}[i%2],
				Outcome: "answered", Took: time.Duration(i%4) * 40 * time.Millisecond, Unit: fmt.Sprintf("u%d", i%2)}
			if i%5 == 0 {
				c.Outcome, c.Code = "refused", "conflict"
			}
			if i%7 == 0 {
				c.Spend = []usagerec.Spend{{Model: "m1", InputTokens: int64(i), OutputTokens: 2, CostMicros: 3}}
			}
			day := []string{"2026-12-05", "2026-12-06"}[i%2]
			calls = append(calls, counted{Call: c, day: day})
		}
		if err := writeLocal(ctx, db, calls, []string{"2026-12-06"}, ""); err != nil {
			t.Fatal(err)
		}
		all = append(all, calls...)
	}
	want, got := expectedLocal(all), readLocal(t, db)
	if len(got) != len(want) {
		t.Errorf("the local record holds %d rows' figures, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %d, want %d", k, got[k], v)
		}
	}
	days, err := localDays(ctx, db)
	if err != nil || len(days) != 2 {
		t.Errorf("the local days are %v (%v), want 2026-12-05 and 2026-12-06", days, err)
	}
}

// expectedLocal is what the local record holds after calls, one call at
// a time: each row's figure under "table day seat rest".
func expectedLocal(all []counted) map[string]int64 {
	want := map[string]int64{}
	last := map[string]int64{}
	for _, c := range all {
		want[fmt.Sprintf("calls %s %s %s %s", c.day, c.Seat, c.Tool, c.Outcome)]++
		want[fmt.Sprintf("durations %s %s %d", c.day, c.Seat, usagerec.Bucket(c.Took))]++
		if c.Code != "" {
			want[fmt.Sprintf("refusals %s %s %s", c.day, c.Seat, c.Code)]++
		}
		want[fmt.Sprintf("units %s %s %s", c.day, c.Seat, c.Unit)] = 1
		for _, sp := range c.Spend {
			want[fmt.Sprintf("spend %s %s %s in", c.day, c.Seat, sp.Model)] += sp.InputTokens
			want[fmt.Sprintf("spend %s %s %s calls", c.day, c.Seat, sp.Model)]++
		}
		k := fmt.Sprintf("last %s %s", c.day, c.Seat)
		last[k] = max(last[k], c.At.UnixNano())
	}
	for k, v := range last {
		want[k] = v
	}
	return want
}

// readLocal reads every row's figure of the local record under the keys
// expectedLocal uses.
func readLocal(t *testing.T, db *sql.DB) map[string]int64 {
	t.Helper()
	ctx := context.Background()
	got := map[string]int64{}
	// read adds each row's figure under "prefix day seat rest" (rest
	// left off where the query gives none).
	read := func(prefix, q string) {
		rows, err := db.QueryContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		for rows.Next() {
			var day, seat, rest string
			var n int64
			if err := rows.Scan(&day, &seat, &rest, &n); err != nil {
				t.Fatal(err)
			}
			k := prefix + " " + day + " " + seat
			if rest != "" {
				k += " " + rest
			}
			got[k] += n
		}
	}
	read("calls", `SELECT day, seat, tool || ' ' || outcome, n FROM local_calls`)
	read("durations", `SELECT day, seat, bucket, n FROM local_durations`)
	read("refusals", `SELECT day, seat, code, n FROM local_refusals`)
	read("units", `SELECT day, seat, unit, 1 FROM local_units`)
	read("spend", `SELECT day, seat, model || ' in', input_tokens FROM local_spend`)
	read("spend", `SELECT day, seat, model || ' calls', calls FROM local_spend`)
	read("last", `SELECT day, seat, '', at FROM local_last`)
	return got
}
