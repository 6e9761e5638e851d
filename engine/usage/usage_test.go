package usage_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/usage"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
)

// paris is the company's clock in these tests: its midnight is 23:00
// UTC in winter, so a UTC day and a company day differ.
const paris = "Europe/Paris"

func openUsage(t *testing.T, dir string, clock engine.Clock) (*node.Node, *usage.Service) {
	t.Helper()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir, Clock: clock, Company: node.CompanyConfig{Timezone: paris},
		Domains: append(node.Builtin(), usage.Spec)})
	svc, ok := n.Service(usage.Name).(*usage.Service)
	if !ok {
		t.Fatalf("the node runs no usage service: %T", n.Service(usage.Name))
	}
	return n, svc
}

func seatCall(seat, unit, tool, outcome, code string, took time.Duration) usage.Call {
	return usage.Call{Seat: usagerec.SeatOf(seat), Unit: unit, Tool: tool, Outcome: outcome, Code: code, Took: took}
}

// TestDaysCutOnTheCompanyClock: calls a node served on either side of
// the company's midnight count on two days; published, they are read
// back by day, seat and tool with their refusals, turns, durations and
// spend; the node's own day objects make both days covered; a restart
// re-derives the same values and publishes nothing new; and the answer is
// a replication answer (stale, or consistent_prefix where the lag is not
// measured).
func TestDaysCutOnTheCompanyClock(t *testing.T) {
	loc, _ := time.LoadLocation(paris)
	clock := enginetest.NewClock(time.Date(2026, 1, 14, 23, 59, 50, 0, loc))
	dir := t.TempDir()
	n, svc := openUsage(t, dir, clock)
	ctx := context.Background()
	svc.Record(seatCall("ana", "u1", "create_work_item", "applied", "", 30*time.Millisecond))
	svc.Record(seatCall("ana", "u1", "get_work_item", "refused", "not_found", 2*time.Millisecond))
	c := seatCall("ana", "u2", "get_work_item", "answered", "", 700*time.Millisecond)
	c.Spend = []usagerec.Spend{{Model: "claude-sonnet", InputTokens: 1000, OutputTokens: 200, CostMicros: 4200}}
	svc.Record(c)
	svc.Record(usage.Call{Seat: usagerec.Operator, Tool: "list_projects", Outcome: "answered", Took: time.Millisecond})
	if _, err := svc.PublishNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	clock.Advance(20 * time.Second) // 00:00:10 on the 15th, company time
	svc.Record(seatCall("ana", "u3", "update_work_item", "pending", "", 6*time.Second))
	svc.Record(seatCall("bo", "u4", "get_work_item", "answered", "", time.Millisecond))
	if _, err := svc.PublishNow(ctx, false); err != nil {
		t.Fatal(err)
	}
	r, err := svc.Usage(ctx, usage.Query{From: "2026-01-14", To: "2026-01-15"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Level != engine.Stale && r.Level != engine.ConsistentPrefix || r.Timezone != paris {
		t.Fatalf("level %s, timezone %s", r.Level, r.Timezone)
	}
	if len(r.Days) != 2 || r.Days[0].Calls != 4 || r.Days[0].Refusals != 1 || r.Days[1].Calls != 2 || r.Days[0].Turns != 2 || r.Days[1].Turns != 2 {
		t.Fatalf("days %+v", r.Days)
	}
	if r.Totals.Calls != 6 || r.Totals.Refusals != 1 || len(r.Totals.Spend) != 1 || r.Totals.Spend[0].CostMicros != 4200 || r.Totals.Spend[0].Calls != 1 {
		t.Fatalf("totals %+v", r.Totals)
	}
	var hist int64
	for _, h := range r.Totals.Durations {
		hist += h
	}
	if hist != 6 || r.Totals.Durations[len(r.Totals.Durations)-1] != 0 || r.Totals.Durations[8] != 1 || r.Totals.Durations[5] != 1 {
		t.Fatalf("durations %v over %v", r.Totals.Durations, r.Totals.DurationBucketsMs)
	}
	if r.Seats[0].Seat != "seat:ana" || r.Seats[0].Calls != 4 || len(r.Seats[0].ByCode) != 1 || r.Seats[0].ByCode[0].Code != "not_found" {
		t.Fatalf("seats %+v", r.Seats)
	}
	if cov := r.Coverage; cov.Expected != 2 || cov.NodeDays != 2 || cov.Ratio != 1 || len(cov.Nodes) != 1 || cov.Nodes[0].Node != "n1" {
		t.Fatalf("coverage %+v", cov)
	}
	tr, err := svc.Usage(ctx, usage.Query{From: "2026-01-14", To: "2026-01-15", Tool: "get_work_item", Seat: "seat:ana"})
	if err != nil || tr.Totals.Calls != 2 || tr.Totals.Refusals != 1 || len(tr.Tools) != 1 || tr.Tools[0].Outcomes["refused"] != 1 {
		t.Fatalf("by tool: %+v %v", tr, err)
	}
	// A restart re-derives every day the local record holds: the same
	// values, nothing published again.
	last := logEnd(t, n)
	n.Close()
	n, svc = openUsage(t, dir, clock)
	if k, err := svc.PublishNow(ctx, true); err != nil || k != 0 {
		t.Fatalf("a restart published %d objects again (%v)", k, err)
	}
	if end := logEnd(t, n); end != last {
		t.Fatalf("the usage log moved from %d to %d on a restart", last, end)
	}
	again, err := svc.Usage(ctx, usage.Query{From: "2026-01-14", To: "2026-01-15"})
	if err != nil || !reflect.DeepEqual(again.Totals, r.Totals) || !reflect.DeepEqual(again.Days, r.Days) {
		t.Fatalf("after the restart: %+v %v", again.Totals, err)
	}
}

func logEnd(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	info, err := n.Log(usage.Name).Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.LastSeq
}

// TestUsageRefusesBadRanges: a range that is no range is refused
// invalid_argument with a sentence naming the key, never served.
func TestUsageRefusesBadRanges(t *testing.T) {
	_, svc := openUsage(t, t.TempDir(), enginetest.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)))
	for _, q := range []usage.Query{
		{From: "2026-3-1"}, {To: "yesterday"}, {From: "2026-03-02", To: "2026-03-01"}, {From: "2025-01-01", To: "2026-03-01"},
	} {
		_, err := svc.Usage(context.Background(), q)
		ref, ok := engine.AsRefusal(err)
		if !ok || ref.Code != engine.CodeInvalidArgument || ref.Message == "" || ref.Fields["key"] == nil {
			t.Errorf("%+v: %v", q, err)
		}
	}
	if r, err := svc.Usage(context.Background(), usage.Query{}); err != nil || len(r.Days) != usage.DefaultDays || r.To != "2026-03-01" {
		t.Fatalf("the default range: %+v %v", r.Days, err)
	}
}

// TestSpecIsCompactedAndGatesNothing: the usage log keeps one message a
// subject for 181 days, asks a fixed 1 GiB under its own ceiling field,
// keeps no gate reserve and decides nothing about the node's standing.
func TestSpecIsCompactedAndGatesNothing(t *testing.T) {
	sp := usage.Spec
	if !sp.Compacted || sp.MaxAge != 181*24*time.Hour || sp.Estate || sp.GateReserve || sp.CeilingKey != "stream.usage_log_max_bytes" || sp.Stream != "CREWLET_USAGE_LOG" {
		t.Fatalf("spec %+v", sp)
	}
	if got := sp.Subjects(); len(got) != 1 || got[0] != statelog.SubjectPrefix(usage.Name)+">" {
		t.Fatalf("subjects %v", got)
	}
}
