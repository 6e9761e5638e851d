//go:build integration

package main

import (
	"context"
	"flag"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/fleettest"
)

var childKills = flag.Int("failover.kills", 0, "TestChildFleetFailover: SIGKILLs per kind of node, reporting p50 and max (0: the short run)")

// childRoles reads, through node i's broker client port, who leads the
// tracker stream and each node's consumer (-1: none or unknown).
func childRoles(ctx context.Context, f *childFleet, i int) (fleettest.Roles, error) {
	nc, err := nats.Connect(f.clientURLs[i], nats.Token(childFleetToken))
	if err != nil {
		return fleettest.Roles{}, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return fleettest.Roles{}, err
	}
	s, err := js.Stream(ctx, "CREWLET_TRACKER_LOG")
	if err != nil {
		return fleettest.Roles{}, err
	}
	index := func(ci *jetstream.ClusterInfo) int {
		if ci != nil && len(ci.Leader) == 2 && ci.Leader[0] == 'n' {
			return int(ci.Leader[1] - '1')
		}
		return -1
	}
	r := fleettest.Roles{Stream: index(s.CachedInfo().Cluster)}
	for j := 0; j < 3; j++ {
		c, err := s.Consumer(ctx, fmt.Sprintf("n%d", j+1))
		if err != nil {
			return r, err
		}
		r.Readers = append(r.Readers, index(c.CachedInfo().Cluster))
	}
	return r, nil
}

// childOwnReaders waits until the stream has a leader and every node's
// consumer is led by the node's own broker, read through a running node.
func childOwnReaders(t *testing.T, f *childFleet, via int) fleettest.Roles {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r, err := childRoles(ctx, f, via)
		cancel()
		own := err == nil && r.Stream >= 0
		for j := 0; own && j < 3; j++ {
			own = r.Readers[j] == j
		}
		if own {
			return r
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumers not led by their own nodes a minute on: %s %v", r, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// childLoad is the steady load over MCP: node i's writer updates keys[i]
// and its reader reads it (linearizable, the operator surface's level).
func childLoad(conns *childConns, keys []string) *fleettest.Load {
	return fleettest.NewLoad(3, func(i int, write bool, n int) (string, bool) {
		c := conns.get(i)
		if c == nil {
			return "", false
		}
		req := mcpgo.CallToolRequest{}
		req.Params.Name, req.Params.Arguments = "get_work_item", map[string]any{"key": keys[i]}
		if write {
			req.Params.Name, req.Params.Arguments = "update_work_item", map[string]any{"key": keys[i], "title": fmt.Sprintf("n%d-%d", i+1, n)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := c.CallTool(ctx, req)
		switch {
		case err != nil && conns.get(i) != c:
			return "", false // the node was killed under the call
		case err != nil:
			return "transport_error", true
		case res.IsError:
			return fmt.Sprint(resultObject(res)["refused"]), true
		case !write:
			return "ok", true
		}
		return fmt.Sprint(resultObject(res)["outcome"]), true
	})
}

// childKill SIGKILLs node v of the fleet under the load and waits until
// every survivor's writes answer applied and its linearizable reads
// answer, then restarts v.
func childKill(t *testing.T, f *childFleet, conns *childConns, l *fleettest.Load, v int) fleettest.Recovery {
	t.Helper()
	t0 := time.Now()
	conns.set(v, nil)
	f.serves[v].Kill(t)
	elected := childElection(f, v, t0)
	deadline := t0.Add(2 * time.Minute)
	for {
		time.Sleep(50 * time.Millisecond)
		if rec, done := fleettest.Tally(3, v, t0, l.Since(t0)); done {
			rec.Election = <-elected
			f.restart(t, v)
			conns.set(v, f.serves[v].HTTPClient(t))
			return rec
		}
		if time.Now().After(deadline) {
			t.Fatalf("the survivors of n%d's SIGKILL had not all recovered two minutes on", v+1)
		}
	}
}

// childElection answers how long after t0 a survivor's broker first named
// a tracker stream leader other than v (zero where v did not lead it).
func childElection(f *childFleet, v int, t0 time.Time) <-chan time.Duration {
	out := make(chan time.Duration, 1)
	go func() {
		nc, err := nats.Connect(f.clientURLs[(v+1)%3], nats.Token(childFleetToken))
		if err != nil {
			out <- -1
			return
		}
		defer nc.Close()
		js, _ := jetstream.New(nc)
		for time.Since(t0) < 2*time.Minute {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			s, err := js.Stream(ctx, "CREWLET_TRACKER_LOG")
			cancel()
			if err == nil {
				if ci := s.CachedInfo().Cluster; ci != nil && ci.Leader != "" && ci.Leader != fmt.Sprintf("n%d", v+1) {
					if ci.LeaderSince != nil && ci.LeaderSince.Before(t0) {
						out <- 0
					} else {
						out <- time.Since(t0)
					}
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
		out <- -1
	}()
	return out
}

// TestChildFleetFailover: three `crewlet serve` processes under writes
// and linearizable reads on every node. Each node's consumer is led by
// its own broker, so a SIGKILL of a node that does not lead the stream
// costs the survivors nothing: every write there answers applied and
// every read answers. With -failover.kills N it is the measurement
// instead: N SIGKILLs of each kind of node, p50 and max per kind.
//
//	go test ./cmd/crewlet -run TestChildFleetFailover -failover.kills 10 -v -timeout 60m
func TestChildFleetFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("boots three processes and kills them")
	}
	f := startChildFleet(t)
	conns := &childConns{conns: make([]*client.Client, 3)}
	for i, s := range f.serves {
		conns.set(i, s.HTTPClient(t))
	}
	Call(t, conns.get(0), "create_project", map[string]any{"key": "FO", "name": "Failover"})
	var keys []string
	for i := 0; i < 3; i++ {
		keys = append(keys, createdItem(t, conns.get(0), map[string]any{"project": "FO", "title": "start"})["key"].(string))
	}
	l := childLoad(conns, keys)
	defer l.Stop()
	if *childKills == 0 {
		r := childOwnReaders(t, f, 0)
		v := (r.Stream + 1) % 3
		rec := childKill(t, f, conns, l, v)
		rec.Case, rec.Roles = fleettest.CaseLeadsNothing, r
		t.Logf("SIGKILL %s", rec)
		for k, n := range rec.Counts {
			if k != "applied" && k != "ok" {
				t.Errorf("the SIGKILL of n%d, which leads neither the stream nor another node's reader, cost the survivors %d× %s", v+1, n, k)
			}
		}
		return
	}
	childFigures(t, f, conns, l)
}

// childFigures is the measurement: -failover.kills SIGKILLs of each kind
// of node, as the fleet arranged its leaders.
func childFigures(t *testing.T, f *childFleet, conns *childConns, l *fleettest.Load) {
	byCase := map[string][]fleettest.Recovery{}
	cases := []string{fleettest.CaseStreamLeader, fleettest.CaseReaderLeader, fleettest.CaseLeadsNothing}
	absent := map[string]int{}
	for k := 0; k < *childKills; k++ {
		for _, kase := range cases {
			time.Sleep(3 * time.Second)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			r, err := childRoles(ctx, f, k%3)
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			v := -1
			for i := 0; i < 3 && v < 0; i++ {
				leads := len(r.LeadsReaders(i)) > 0
				match := i != r.Stream && leads == (kase == fleettest.CaseReaderLeader)
				if kase == fleettest.CaseStreamLeader {
					match = i == r.Stream
				}
				if match {
					v = i
				}
			}
			if v < 0 {
				absent[kase]++
				continue
			}
			rec := childKill(t, f, conns, l, v)
			rec.Case, rec.Roles = kase, r
			t.Logf("%s", rec)
			byCase[kase] = append(byCase[kase], rec)
		}
	}
	for _, kase := range cases {
		t.Logf("%s", fleettest.Figures(kase, byCase[kase], absent[kase]))
	}
}
