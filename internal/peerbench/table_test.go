package peerbench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestWriteTable: each workload's row holds both targets' figures, the
// floor's (the Floor target's for a write, the HTTP round trip at the
// same concurrency for a read), the rate and CPU ratios, and the first
// target's p50 over the floor's; a kind one target lacks is dashes there.
// The SQL floor is no target of the main table: its own section holds
// each target's CPU per operation over its.
func TestWriteTable(t *testing.T) {
	figs := []Figure{
		{Target: "crewlet", Workload: "http_floor c=1", OpsPerSec: 9000, P50: 100 * time.Microsecond},
		{Target: "crewlet", Workload: "create c=1", OpsPerSec: 600, P50: 1200 * time.Microsecond, CPUPerOp: time.Millisecond, RSS: 80 << 20, PSS: 60 << 20, Drain: 1500 * time.Millisecond},
		{Target: "rqlite", Workload: "create c=1", OpsPerSec: 400, P50: 900 * time.Microsecond, CPUPerOp: 500 * time.Microsecond, RSS: 50 << 20},
		{Target: "floor", Workload: "create c=1", OpsPerSec: 3000, P50: 300 * time.Microsecond},
		{Target: "crewlet", Workload: "get c=1", OpsPerSec: 4000, P50: 250 * time.Microsecond},
		{Target: "rqlite", Workload: "get c=1", OpsPerSec: 2000, P50: 400 * time.Microsecond},
		{Target: "crewlet", Workload: "get_mcp c=1", OpsPerSec: 1000, P50: 700 * time.Microsecond},
		{Target: SQLFloorTarget, Workload: "create c=1", OpsPerSec: 4000, P50: 240 * time.Microsecond, CPUPerOp: 250 * time.Microsecond},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, figs); err != nil {
		t.Fatal(err)
	}
	main, sqlPart, found := strings.Cut(b.String(), "the same job's SQL alone")
	if !found {
		t.Fatalf("no section of the SQL floor:\n%s", b.String())
	}
	if got := strings.Fields(strings.Split(sqlPart, "\n")[2]); strings.Join(got, " ") != "create c=1 4000 240µs 250µs 4.00 2.00" {
		t.Errorf("the SQL floor's row is %q:\n%s", got, b.String())
	}
	rows := map[string][]string{}
	for _, l := range strings.Split(main, "\n") {
		f := strings.Fields(l)
		if len(f) > 2 {
			rows[f[0]+" "+f[1]] = f[2:]
		}
	}
	// crewlet: 7 columns, rqlite: 7, floor: 2, then the ratios.
	for wl, want := range map[string]string{
		"create c=1":  "600 1.2ms 0s 0 1ms 80M 60M 400 900µs 0s 0 500µs 50M - 3000 300µs 1.50 2.00 4.00",
		"get c=1":     "4000 250µs 0s 0 - - - 2000 400µs 0s 0 - - - 9000 100µs 2.00 - 2.50",
		"get_mcp c=1": "1000 700µs 0s 0 - - - - - - - - - - 9000 100µs - - 7.00",
	} {
		if got := strings.Join(rows[wl], " "); got != want {
			t.Errorf("%s:\n got %s\nwant %s\n%s", wl, got, want, b.String())
		}
	}
	if got := strings.Join(rows["http_floor c=1"][14:], " "); got != "- - - - -" {
		t.Errorf("the HTTP floor is held against %q, want nothing", got)
	}
	// The drain table names the one figure that had one.
	drains := map[string]string{}
	for _, l := range strings.Split(sqlPart, "\n") {
		if f := strings.Fields(l); len(f) > 2 {
			drains[f[0]+" "+f[1]] = strings.Join(f[2:], " ")
		}
	}
	if got := drains["crewlet create"]; got != "c=1 1.5s" {
		t.Errorf("the drain row is %q:\n%s", got, b.String())
	}
}
