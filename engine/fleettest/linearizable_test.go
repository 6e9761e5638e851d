//go:build integration

package fleettest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

var (
	soak        = flag.Bool("soak", false, "run -soak.runs seeded nemesis runs instead of one")
	soakRuns    = flag.Int("soak.runs", 50, "seeded runs under -soak")
	seedFlag    = flag.Int64("seed", 0, "nemesis seed of the single run (0: from the clock)")
	nemesisTime = flag.Duration("nemesis", 20*time.Second, "how long the nemesis runs in each run")
)

// TestLinearizableUnderFaults is the per-push tier: one seeded run of
// about a minute. With -soak it runs -soak.runs seeds.
func TestLinearizableUnderFaults(t *testing.T) {
	if testing.Short() {
		t.Skip("a minute of faults")
	}
	if !*soak {
		seed := *seedFlag
		if seed == 0 {
			seed = time.Now().UnixNano()
		}
		runNemesis(t, seed, *nemesisTime)
		return
	}
	base := *seedFlag
	if base == 0 {
		base = time.Now().UnixNano()
	}
	for i := 0; i < *soakRuns; i++ {
		seed := base + int64(i)
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) { runNemesis(t, seed, *nemesisTime) })
	}
}

// runNemesis is one seeded run: clients read and update three items on
// every node while the nemesis injects faults for dur, then the fleet
// heals and converges, and the history is checked for linearizability
// against the log.
func runNemesis(t *testing.T, seed int64, dur time.Duration) {
	t.Logf("seed %d (rerun: go test ./engine/fleettest -run TestLinearizableUnderFaults -seed %d)", seed, seed)
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.HeartbeatInterval = time.Second
	}})
	ctx := context.Background()
	origin := time.Now()
	now := func() int64 { return int64(time.Since(origin)) }
	var hist fleettest.History
	keys := seedItems(t, c, now, &hist)

	stop := make(chan struct{})
	var wg sync.WaitGroup
	const perNode = 2
	for cl := 0; cl < c.Size()*perNode; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			client(c, cl, cl%c.Size(), seed, keys, now, &hist, stop)
		}(cl)
	}
	nem := fleettest.NewNemesis(c, seed, t.Logf)
	nem.Start()
	time.Sleep(dur)
	if err := nem.Stop(); err != nil {
		t.Fatal(err)
	}
	healed := time.Now()
	// A little quiet traffic after the heal, then the clients stop.
	time.Sleep(2 * time.Second)
	close(stop)
	wg.Wait()
	end := now()
	converge := awaitConverged(t, c, healed)

	// Resolve every write from the quiesced log, by op id.
	msgs, err := fleettest.ReadLog(ctx, c.Node(0).Log(engine.DomainTracker))
	if err != nil {
		t.Fatal(err)
	}
	landed := fleettest.Landed(msgs)
	v := fleettest.Check(&hist, landed, end, 2*time.Minute)
	for _, p := range v.Problems {
		t.Error(p)
	}
	acknowledgedEverywhere(t, c, &hist)
	report(t, seed, nem, v, converge)
}

// seedItems files the LIN project and its three items through n1, each
// create in the history, and returns their keys.
func seedItems(t *testing.T, c *fleettest.Cluster, now func() int64, hist *fleettest.History) []string {
	ctx := context.Background()
	pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "LIN", "Linearizability")
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, pw.WriteResult, err)
	var keys []string
	for i := 0; i < 3; i++ {
		call := now()
		iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "LIN", Title: "start"})
		if err != nil || iw.Outcome != engine.Applied {
			t.Fatalf("create item: %+v %v", iw, err)
		}
		keys = append(keys, iw.Item.Key)
		hist.Add(fleettest.HistOp{In: fleettest.OpInput{Key: iw.Item.Key, Kind: fleettest.OpCreate}, Out: fleettest.OpOutput{Version: iw.Item.Version}, Call: call, Ret: now(), Outcome: "applied"})
	}
	return keys
}

// awaitConverged waits, up to 90 seconds, for every node to hold the same
// rows after the heal, saying so every ten seconds; it returns how long
// that took.
func awaitConverged(t *testing.T, c *fleettest.Cluster, healed time.Time) time.Duration {
	ctx := context.Background()
	var convergeErr error
	deadline := time.Now().Add(90 * time.Second)
	lastSaid := time.Now()
	for {
		if convergeErr = fleettest.Converged(ctx, c); convergeErr == nil || time.Now().After(deadline) {
			break
		}
		if time.Since(lastSaid) > 10*time.Second {
			t.Logf("converging %v after the heal: %v", time.Since(healed).Round(time.Second), convergeErr)
			lastSaid = time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	converge := time.Since(healed)
	if convergeErr != nil {
		t.Fatalf("not converged %v after the heal: %v", converge, convergeErr)
	}
	return converge
}

// acknowledgedEverywhere: every applied or pending write is applied on
// every node, its ledger row there exactly once.
func acknowledgedEverywhere(t *testing.T, c *fleettest.Cluster, hist *fleettest.History) {
	for i := 0; i < c.Size(); i++ {
		for _, h := range hist.Ops() {
			if h.In.Kind != fleettest.OpUpdate || (h.Outcome != "applied" && h.Outcome != "pending") {
				continue
			}
			var k int
			key, _ := uuid.Parse(h.OpID)
			if err := c.Node(i).DB().QueryRow(`SELECT count(*) FROM statelog_ledger WHERE op_id LIKE ?`, ledger.ClientForm(key).String()+".%").Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k != 1 {
				t.Errorf("n%d holds %d ledger rows for acknowledged %s", i+1, k, h.OpID)
			}
		}
	}
}

// report logs what the run injected and what the checker found, and
// fails a run that is not linearizable (writing porcupine's picture of
// it) or that did nothing.
func report(t *testing.T, seed int64, nem *fleettest.Nemesis, v fleettest.Verdict, converge time.Duration) {
	faults, failed := nem.Counts()
	total := 0
	var fk []string
	for k, n := range faults {
		total += n
		fk = append(fk, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(fk)
	t.Logf("seed %d: faults injected and survived %d (%s; restarts retried %d); %s; converged %v after the heal",
		seed, total, strings.Join(fk, " "), len(failed), v, converge.Round(time.Millisecond))
	// Errors without a code are counted as unknown writes by Check; their
	// texts say what the engine answered instead of a refusal.
	for text, n := range v.ErrTexts {
		t.Logf("seed %d: %d× error without a code: %s", seed, n, text)
	}
	if v.Result != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("crewlet-linearizability-%d.html", seed))
		if err := porcupine.VisualizePath(fleettest.ItemModel, v.Info, path); err == nil {
			t.Logf("visualization: %s", path)
		}
		t.Fatalf("porcupine: %s", v.Result)
	}
	for _, f := range failed {
		t.Logf("nemesis: %s (started again after the heal)", f)
	}
	if v.Acked == 0 || v.Reads == 0 {
		t.Fatalf("the run did nothing: %d acknowledged writes, %d reads", v.Acked, v.Reads)
	}
}

// client runs reads and if_match updates on node n until stop.
func client(c *fleettest.Cluster, cl, n int, seed int64, keys []string, now func() int64, hist *fleettest.History, stop chan struct{}) {
	rng := rand.New(rand.NewSource(seed*31 + int64(cl)))
	known := map[string]uint64{}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		// A paused node's clients are paused with it.
		c.WaitRunning(n)
		nd := c.Node(n)
		if nd == nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		key := keys[rng.Intn(len(keys))]
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if rng.Intn(2) == 0 || known[key] == 0 {
			call := now()
			r, err := nd.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, key)
			ret := now()
			op := fleettest.HistOp{Client: cl, Node: n, In: fleettest.OpInput{Key: key, Kind: fleettest.OpRead}, Call: call, Ret: ret}
			if err == nil {
				op.Outcome, op.Out.Version = "ok", r.Item.Version
				known[key] = r.Item.Version
			} else {
				op.Outcome = "refused:" + string(engine.CodeOf(err))
			}
			hist.Add(op)
		} else {
			ifMatch := known[key]
			// A v7 UUID minted here, before the first attempt, so the
			// write can be found on the log by it whatever it answers.
			id, _ := uuid.NewV7()
			title := fmt.Sprintf("c%d-%d", cl, i)
			call := now()
			w, err := nd.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{OpID: id.String()}, key, ifMatch, tracker.ItemPatch{Title: &title})
			ret := now()
			op := fleettest.HistOp{Client: cl, Node: n, In: fleettest.OpInput{Key: key, Kind: fleettest.OpUpdate, IfMatch: ifMatch}, Call: call, Ret: ret,
				OpID: id.String(), Position: w.Position}
			a := fleettest.UpdateAnswer{Outcome: string(w.Outcome), Position: w.Position}
			var ref *engine.Refusal
			switch {
			case errors.As(err, &ref):
				a.Refused = ref.Code
				a.CurrentVersion, _ = ref.Fields["current_version"].(uint64)
			case err != nil:
				a.Err = err
			}
			if v := op.Record(a); v != 0 || a.Refused == engine.CodeStale {
				known[key] = v
			}
			hist.Add(op)
		}
		cancel()
	}
}

// TestItemModelCatchesAStaleRead: the model the nemesis run is checked
// with refuses a history in which a read returns a version older than one
// an earlier, completed update made, and a stale refusal of an if_match
// that was current; it accepts the same history read fresh.
func TestItemModelCatchesAStaleRead(t *testing.T) {
	create := porcupine.Operation{ClientId: 0, Input: fleettest.OpInput{Key: "A", Kind: fleettest.OpCreate}, Output: fleettest.OpOutput{Version: 3}, Call: 0, Return: 1}
	update := porcupine.Operation{ClientId: 0, Input: fleettest.OpInput{Key: "A", Kind: fleettest.OpUpdate, IfMatch: 3}, Output: fleettest.OpOutput{Version: 7}, Call: 2, Return: 3}
	staleRead := porcupine.Operation{ClientId: 1, Input: fleettest.OpInput{Key: "A", Kind: fleettest.OpRead}, Output: fleettest.OpOutput{Version: 3}, Call: 4, Return: 5}
	freshRead := porcupine.Operation{ClientId: 1, Input: fleettest.OpInput{Key: "A", Kind: fleettest.OpRead}, Output: fleettest.OpOutput{Version: 7}, Call: 4, Return: 5}
	wrongStale := porcupine.Operation{ClientId: 2, Input: fleettest.OpInput{Key: "A", Kind: fleettest.OpUpdate, IfMatch: 7}, Output: fleettest.OpOutput{Stale: true}, Call: 6, Return: 7}
	if r := porcupine.CheckOperationsTimeout(fleettest.ItemModel, []porcupine.Operation{create, update, staleRead}, time.Second); r != porcupine.Illegal {
		t.Fatalf("stale read: %s, want Illegal", r)
	}
	if r := porcupine.CheckOperationsTimeout(fleettest.ItemModel, []porcupine.Operation{create, update, freshRead, wrongStale}, time.Second); r != porcupine.Illegal {
		t.Fatalf("stale refusal of the current version: %s, want Illegal", r)
	}
	if r := porcupine.CheckOperationsTimeout(fleettest.ItemModel, []porcupine.Operation{create, update, freshRead}, time.Second); r != porcupine.Ok {
		t.Fatalf("fresh read: %s, want Ok", r)
	}
}
