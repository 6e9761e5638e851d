//go:build integration

package usage_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/usage"
	"github.com/crewlet/crewlet/engine/usage/usagerec"
	"github.com/nats-io/nats.go/jetstream"
)

func usageOf(t *testing.T, c *fleettest.Cluster, i int) *usage.Service {
	t.Helper()
	n := c.Node(i)
	if n == nil {
		t.Fatalf("n%d is stopped", i+1)
	}
	return n.Service(usage.Name).(*usage.Service)
}

// seatCalls is what a report says one seat did on one day.
func seatCalls(r usage.Report, day, seat string) int64 {
	for _, d := range r.Days {
		if d.Day != day {
			continue
		}
		for _, s := range d.Seats {
			if s.Seat == seat {
				return s.Calls
			}
		}
	}
	return 0
}

// TestUsageAcrossMidnight: three data nodes on one fake company clock
// each serve a seat; n2 serves a call ten seconds before the company's
// midnight, which it records and never publishes before it stops; the
// clock passes midnight and n2 starts again: its first derivation
// publishes the day it was down across, so every node answers the same
// fleet usage for both days, n2's late call included, with full
// coverage. n3 then stays down a whole company day: the day it missed is
// a coverage gap on every node, not a refusal. A fourth node joining with
// an empty disk replays the usage log's current values only (one message
// a subject, fewer than were ever published) and answers the same.
func TestUsageAcrossMidnight(t *testing.T) {
	loc, _ := time.LoadLocation(paris)
	clock := enginetest.NewClock(time.Date(2026, 1, 14, 23, 59, 30, 0, loc))
	c := fleettest.StartCluster(t, fleettest.Options{Size: 4, Configure: func(i int, cfg *node.Config) {
		cfg.Clock, cfg.Company.Timezone = clock, paris
		cfg.Domains = append(node.Builtin(), usage.Spec)
	}})
	ctx := context.Background()
	seats := []string{"ana", "bo", "cy"}
	for i, s := range seats {
		svc := usageOf(t, c, i)
		for k := 0; k <= i; k++ {
			svc.Record(seatCall(s, fmt.Sprintf("u%d", k), "get_work_item", "answered", "", time.Millisecond))
		}
		publish(t, svc)
	}
	clock.Advance(20 * time.Second) // 23:59:50
	late := usageOf(t, c, 1)
	late.Record(seatCall("bo", "u9", "update_work_item", "applied", "", 40*time.Millisecond))
	if err := late.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	c.Stop(1)                       // down across midnight, its last call unpublished
	clock.Advance(40 * time.Second) // 00:00:30 on the 15th
	for _, i := range []int{0, 2} {
		svc := usageOf(t, c, i)
		svc.Record(seatCall(seats[i], "u20", "list_projects", "answered", "", time.Millisecond))
		publish(t, svc)
	}
	if err := c.Start(1); err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]int64{{"2026-01-14", "seat:ana"}: 1, {"2026-01-14", "seat:bo"}: 3, {"2026-01-14", "seat:cy"}: 3,
		{"2026-01-15", "seat:ana"}: 1, {"2026-01-15", "seat:cy"}: 1}
	agree(t, c, []int{0, 1, 2}, usage.Query{From: "2026-01-14", To: "2026-01-15"}, want)

	missADay(t, c, clock)
	joinFromNothing(t, c, want)
}

// missADay: n3 stays down the whole 16th; the day it missed is a gap on
// every node's coverage, not a refusal.
func missADay(t *testing.T, c *fleettest.Cluster, clock *enginetest.Clock) {
	ctx := context.Background()
	c.Stop(2)
	for range 2 { // the 16th, then the 17th, n3 back on the 17th
		clock.Advance(24 * time.Hour)
		for _, i := range []int{0, 1, 3} {
			publish(t, usageOf(t, c, i))
		}
	}
	if err := c.Start(2); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		for _, i := range []int{0, 1, 2} {
			r, err := usageOf(t, c, i).Usage(ctx, usage.Query{From: "2026-01-14", To: "2026-01-17"})
			if err != nil {
				return err
			}
			missing := map[string][]string{}
			for _, n := range r.Coverage.Nodes {
				missing[n.Node] = n.Missing
			}
			if len(missing["n1"])+len(missing["n2"]) != 0 || fmt.Sprint(missing["n3"]) != "[2026-01-16]" || r.Coverage.Ratio >= 1 {
				return fmt.Errorf("n%d's coverage: %+v", i+1, r.Coverage)
			}
		}
		return nil
	})

}

// joinFromNothing: a fourth node joins with an empty disk and replays the
// usage log's current values only. The other nodes go on publishing while
// it catches up, so what it is handed is bounded by the current values
// when it joined plus every publication after.
func joinFromNothing(t *testing.T, c *fleettest.Cluster, want map[[2]string]int64) {
	c.Stop(3)
	if err := os.RemoveAll(c.Config(3).DataDir); err != nil {
		t.Fatal(err)
	}
	before := usageLogState(t, c.Node(0))
	if before.Msgs >= before.LastSeq {
		t.Fatalf("the usage log holds %d current values of %d ever published: nothing was compacted", before.Msgs, before.LastSeq)
	}
	if err := c.Start(3); err != nil {
		t.Fatal(err)
	}
	agree(t, c, []int{0, 1, 2, 3}, usage.Query{From: "2026-01-14", To: "2026-01-15"}, want)
	joined := c.Node(3)
	after := usageLogState(t, joined)
	// Applied, not Deliveries: a consumer may hand a record over again
	// (after its leader moves), and the replica skips it.
	got := joined.Replica(usage.Name).Stats().Applied
	if bound := before.Msgs + (after.LastSeq - before.LastSeq); got > bound {
		t.Fatalf("the joiner was handed %d records; the log held %d current values of %d ever published when it joined, and %d were published since",
			got, before.Msgs, before.LastSeq, after.LastSeq-before.LastSeq)
	}
	t.Logf("usage log: %d publications, %d current values when the joiner joined; %d published since; the joiner applied %d records",
		before.LastSeq, before.Msgs, after.LastSeq-before.LastSeq, got)
}

// usageLogState reads the usage log's state through n's broker.
func usageLogState(t *testing.T, n *node.Node) jetstream.StreamState {
	t.Helper()
	ctx := context.Background()
	st, err := n.Broker().JS.Stream(ctx, usagerec.Stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return info.State
}

// publish publishes svc's days, again while the broker elects a leader
// after a node stopped.
func publish(t *testing.T, svc *usage.Service) {
	t.Helper()
	enginetest.CheckFor(t, 30*time.Second, 250*time.Millisecond, func() error {
		_, err := svc.PublishNow(context.Background(), false)
		return err
	})
}

// agree waits until every node in nodes answers want for q, covering
// every day of n1, n2 and n3 (n4 ran on the first day only, before it
// was wiped to join again, and is not asked about).
func agree(t *testing.T, c *fleettest.Cluster, nodes []int, q usage.Query, want map[[2]string]int64) {
	t.Helper()
	ctx := context.Background()
	enginetest.CheckFor(t, 60*time.Second, 200*time.Millisecond, func() error {
		for _, i := range nodes {
			r, err := usageOf(t, c, i).Usage(ctx, q)
			if err != nil {
				return err
			}
			for k, n := range want {
				if got := seatCalls(r, k[0], k[1]); got != n {
					return fmt.Errorf("n%d: %s on %s: %d calls, want %d", i+1, k[1], k[0], got, n)
				}
			}
			for _, n := range r.Coverage.Nodes {
				if n.Node != "n4" && len(n.Missing) != 0 {
					return fmt.Errorf("n%d: coverage %+v", i+1, r.Coverage)
				}
			}
		}
		return nil
	})
}
