package usageapply_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog/applytest"
	"github.com/crewlet/crewlet/engine/usage/usageapply"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// TestScripts runs the apply side's scripts (testdata/*.txt; the commands
// are applytest's, the record line is `day node=N day=D seat=S
// calls=(tool:outcome:n,...) refusals=(code:n,...) turns=N
// durations=(n,...) spend=(model:in:out:cost_micros:calls,...)`): day
// records applied on real SQLite files, the rows after every command held
// to the same records replayed from scratch. Rewrite with -rewrite.
func TestScripts(t *testing.T) {
	applytest.Run(t, "testdata", applytest.Domain{Domain: usageapply.Domain{}, Tables: tables, Record: dayRecord})
}

var tables = []applytest.Table{
	{Name: "usage_days", Order: "node, day, seat", Print: "node, day, seat, turns, durations, seats, version"},
	{Name: "usage_tools", Order: "node, day, seat, tool, outcome"},
	{Name: "usage_refusals", Order: "node, day, seat, code"},
	{Name: "usage_spend", Order: "node, day, seat, model"},
}

func dayRecord(verb string, a applytest.Args) (*record.Record, error) {
	if verb != "day" {
		return nil, fmt.Errorf("no record %q", verb)
	}
	d := usagerec.Day{Node: a.Str("node"), Day: a.Str("day"), Seat: a.Str("seat")}
	var err error
	if d.Turns, err = a.Int("turns"); err != nil {
		return nil, err
	}
	if d.Seats, err = a.Int("seats"); err != nil {
		return nil, err
	}
	for _, v := range a.Strs("calls") {
		f := strings.Split(v, ":")
		if len(f) != 3 {
			return nil, fmt.Errorf("calls=%s: want tool:outcome:n", v)
		}
		n, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil {
			return nil, err
		}
		d.Calls = append(d.Calls, usagerec.ToolCalls{Tool: f[0], Outcome: f[1], N: n})
	}
	for _, v := range a.Strs("refusals") {
		code, ns, _ := strings.Cut(v, ":")
		n, err := strconv.ParseInt(ns, 10, 64)
		if err != nil {
			return nil, err
		}
		d.Refusals = append(d.Refusals, usagerec.Refusals{Code: code, N: n})
	}
	for _, v := range a.Strs("durations") {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, err
		}
		d.Durations = append(d.Durations, n)
	}
	for _, v := range a.Strs("spend") {
		f := strings.Split(v, ":")
		if len(f) != 5 {
			return nil, fmt.Errorf("spend=%s: want model:in:out:cost_micros:calls", v)
		}
		var n [4]int64
		for i := range n {
			if n[i], err = strconv.ParseInt(f[i+1], 10, 64); err != nil {
				return nil, err
			}
		}
		d.Spend = append(d.Spend, usagerec.Spend{Model: f[0], InputTokens: n[0], OutputTokens: n[1], CostMicros: n[2], Calls: n[3]})
	}
	rec, err := applytest.Make(usagerec.KindDay, usagerec.DaySubject(d.Node, d.Day, d.Seat), []string{usagerec.DayScope(d.Node, d.Day, d.Seat)}, d)
	if err == nil {
		rec.Version = usagerec.DayVersion
	}
	return rec, err
}
