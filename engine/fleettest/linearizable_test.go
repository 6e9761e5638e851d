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
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

var (
	soak        = flag.Bool("soak", false, "run -soak.runs seeded nemesis runs instead of one")
	soakRuns    = flag.Int("soak.runs", 50, "seeded runs under -soak")
	seedFlag    = flag.Int64("seed", 0, "nemesis seed of the single run (0: from the clock)")
	nemesisTime = flag.Duration("nemesis", 40*time.Second, "how long the nemesis runs in each run")
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

// opKind names what a history operation does to one work item.
type opKind int

const (
	opCreate opKind = iota
	opRead
	opUpdate
)

type opInput struct {
	Key     string
	Kind    opKind
	IfMatch uint64
}

type opOutput struct {
	// Version is what a read saw, or what a create or an update made.
	Version uint64
	// Stale: the update was refused stale.
	Stale bool
}

// itemModel is one work item's version under reads and if_match updates.
// Versions are log positions, so an update's new version is only known
// from its answer (or, for an unknown one, from where it landed).
var itemModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(opInput).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(uint64), input.(opInput), output.(opOutput)
		switch in.Kind {
		case opCreate:
			return v == 0, out.Version
		case opRead:
			return v != 0 && out.Version == v, v
		default:
			if out.Stale {
				return v != in.IfMatch, v
			}
			return v == in.IfMatch && out.Version > v, out.Version
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(opInput), output.(opOutput)
		switch in.Kind {
		case opCreate:
			return fmt.Sprintf("create %s -> v%d", in.Key, out.Version)
		case opRead:
			return fmt.Sprintf("read %s -> v%d", in.Key, out.Version)
		}
		if out.Stale {
			return fmt.Sprintf("update %s if_match v%d -> stale", in.Key, in.IfMatch)
		}
		return fmt.Sprintf("update %s if_match v%d -> v%d", in.Key, in.IfMatch, out.Version)
	},
	DescribeState: func(s any) string { return fmt.Sprintf("v%d", s.(uint64)) },
}

// histOp is one operation as a client saw it.
type histOp struct {
	client       int
	node         int
	in           opInput
	out          opOutput
	call, ret    int64
	opID         string
	outcome      string // applied, pending, unknown, stale, refused:<code>, error
	err          string // the error's text where outcome is error
	position     string
	indefinite   bool // the write's fate is known only from the log
	definiteFail bool // refused with a code that promises nothing was written
}

type history struct {
	mu  sync.Mutex
	ops []histOp
}

func (h *history) add(op histOp) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// definitelyNotWritten are refusals that promise nothing was appended:
// stale is decided before any publish; no_quorum is the broker answering
// that it delivered the append to nobody; the rest are bad input. The run
// checks each promise against the quiesced log.
var definitelyNotWritten = map[engine.Code]bool{engine.CodeStale: true, engine.CodeNoQuorum: true, engine.CodeNotFound: true, engine.CodeInvalidArgument: true}

func runNemesis(t *testing.T, seed int64, dur time.Duration) {
	t.Logf("seed %d (rerun: go test ./engine/fleettest -run TestLinearizableUnderFaults -seed %d)", seed, seed)
	c := fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.HeartbeatInterval = time.Second
	}})
	ctx := context.Background()
	origin := time.Now()
	now := func() int64 { return int64(time.Since(origin)) }
	var hist history

	if pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "LIN", "Linearizability"); err != nil || pw.Outcome != engine.Applied {
		t.Fatalf("create project: %+v %v", pw, err)
	}
	var keys []string
	for i := 0; i < 3; i++ {
		call := now()
		iw, err := c.Node(0).Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "LIN", Title: "start"})
		if err != nil || iw.Outcome != engine.Applied {
			t.Fatalf("create item: %+v %v", iw, err)
		}
		keys = append(keys, iw.Item.Key)
		hist.add(histOp{in: opInput{Key: iw.Item.Key, Kind: opCreate}, out: opOutput{Version: iw.Item.Version}, call: call, ret: now(), outcome: "applied"})
	}

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

	// Resolve every write from the quiesced log, by op id.
	msgs, err := fleettest.ReadLog(ctx, c.Node(0).Log(engine.DomainTracker))
	if err != nil {
		t.Fatal(err)
	}
	landed := map[string][]uint64{}
	for _, m := range msgs {
		rec, err := record.Decode(m.Data)
		if err != nil || rec.OpID == "" || rec.Kind == record.KindBarrier {
			continue
		}
		// Keyed by the key the client minted: the engine names the record
		// <client form of the key>.<verb>-<object>.
		u, _, _ := strings.Cut(rec.OpID, ".")
		if id, err := uuid.Parse(u); err == nil && ledger.IsClientForm(id) {
			u = ledger.KeyOf(id).String()
		}
		landed[u] = append(landed[u], m.Seq)
	}
	var (
		ops                                      []porcupine.Operation
		reads, acked, applied, pending, stale    int
		unknownLanded, unknownNever              int
		lost, twice, refusedLanded, readsRefused int
		outcomes                                 = map[string]int{}
		errTexts                                 = map[string]int{}
	)
	for op, seqs := range landed {
		if len(seqs) > 1 {
			twice++
			t.Errorf("op %s landed %d times: %v", op, len(seqs), seqs)
		}
	}
	hist.mu.Lock()
	defer hist.mu.Unlock()
	for _, h := range hist.ops {
		outcomes[h.outcome]++
		if h.err != "" {
			errTexts[h.err]++
		}
		switch {
		case h.in.Kind == opRead && h.outcome == "ok":
			reads++
		case h.in.Kind == opRead:
			readsRefused++
			continue
		case h.in.Kind == opCreate:
		case h.outcome == "applied" || h.outcome == "pending":
			acked++
			if h.outcome == "applied" {
				applied++
			} else {
				pending++
			}
			if seqs := landed[h.opID]; len(seqs) == 0 {
				lost++
				t.Errorf("acknowledged write %s (%s at %s) is not on the log", h.opID, h.outcome, h.position)
			}
		case h.outcome == "stale":
			stale++
			if len(landed[h.opID]) > 0 {
				refusedLanded++
				t.Errorf("write %s refused stale but landed at %v", h.opID, landed[h.opID])
			}
		case h.definiteFail:
			if len(landed[h.opID]) > 0 {
				refusedLanded++
				t.Errorf("write %s refused %s but landed at %v", h.opID, h.outcome, landed[h.opID])
			}
			continue
		case h.indefinite:
			seqs := landed[h.opID]
			if len(seqs) == 0 {
				unknownNever++
				continue // never happened: not in the history
			}
			unknownLanded++
			h.out = opOutput{Version: seqs[0]}
			h.ret = end + 1 // open: it may have taken effect at any time after its call
		}
		ops = append(ops, porcupine.Operation{ClientId: h.client, Input: h.in, Output: h.out, Call: h.call, Return: h.ret})
	}
	// Every applied or pending write is applied on every node.
	for i := 0; i < c.Size(); i++ {
		for _, h := range hist.ops {
			if h.in.Kind != opUpdate || (h.outcome != "applied" && h.outcome != "pending") {
				continue
			}
			var k int
			key, _ := uuid.Parse(h.opID)
			if err := c.Node(i).DB().QueryRow(`SELECT count(*) FROM statelog_ledger WHERE op_id LIKE ?`, ledger.ClientForm(key).String()+".%").Scan(&k); err != nil {
				t.Fatal(err)
			}
			if k != 1 {
				t.Errorf("n%d holds %d ledger rows for acknowledged %s", i+1, k, h.opID)
			}
		}
	}
	res, info := porcupine.CheckOperationsVerbose(itemModel, ops, 2*time.Minute)
	faults, failed := nem.Counts()
	total := 0
	var fk []string
	for k, v := range faults {
		total += v
		fk = append(fk, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(fk)
	var oc []string
	for k, v := range outcomes {
		oc = append(oc, fmt.Sprintf("%s=%d", k, v))
	}
	sort.Strings(oc)
	t.Logf("seed %d: faults injected and survived %d (%s; restarts retried %d); ops %d (%s); reads ok %d, refused %d; writes acknowledged %d (applied %d, pending %d), stale %d; lost %d; applied twice %d; refused but landed %d; unknown landed %d, never %d; porcupine %s; converged %v after the heal",
		seed, total, strings.Join(fk, " "), len(failed), len(hist.ops), strings.Join(oc, " "), reads, readsRefused,
		acked, applied, pending, stale, lost, twice, refusedLanded, unknownLanded, unknownNever, res, converge.Round(time.Millisecond))
	// Errors without a code are counted as unknown writes above; their
	// texts say what the engine answered instead of a refusal.
	for text, n := range errTexts {
		t.Logf("seed %d: %d× error without a code: %s", seed, n, text)
	}
	if res != porcupine.Ok {
		path := filepath.Join(os.TempDir(), fmt.Sprintf("crewlet-linearizability-%d.html", seed))
		if err := porcupine.VisualizePath(itemModel, info, path); err == nil {
			t.Logf("visualization: %s", path)
		}
		t.Fatalf("porcupine: %s", res)
	}
	for _, f := range failed {
		t.Logf("nemesis: %s (started again after the heal)", f)
	}
	if acked == 0 || reads == 0 {
		t.Fatalf("the run did nothing: %d acknowledged writes, %d reads", acked, reads)
	}
}

// client runs reads and if_match updates on node n until stop.
func client(c *fleettest.Cluster, cl, n int, seed int64, keys []string, now func() int64, hist *history, stop chan struct{}) {
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
			op := histOp{client: cl, node: n, in: opInput{Key: key, Kind: opRead}, call: call, ret: ret}
			if err == nil {
				op.outcome, op.out.Version = "ok", r.Item.Version
				known[key] = r.Item.Version
			} else {
				op.outcome = "refused:" + string(engine.CodeOf(err))
			}
			hist.add(op)
		} else {
			ifMatch := known[key]
			// A v7 UUID minted here, before the first attempt, so the
			// write can be found on the log by it whatever it answers.
			id, _ := uuid.NewV7()
			title := fmt.Sprintf("c%d-%d", cl, i)
			call := now()
			w, err := nd.Tracker().UpdateWorkItem(ctx, engine.WriteOptions{OpID: id.String()}, key, ifMatch, tracker.ItemPatch{Title: &title})
			ret := now()
			op := histOp{client: cl, node: n, in: opInput{Key: key, Kind: opUpdate, IfMatch: ifMatch}, call: call, ret: ret,
				opID: id.String(), position: w.Position}
			var ref *engine.Refusal
			switch {
			case err == nil && (w.Outcome == engine.Applied || w.Outcome == engine.Pending):
				op.outcome = string(w.Outcome)
				p, perr := engine.ParsePosition(w.Position)
				if perr != nil {
					op.outcome, op.indefinite = "unparsed_position", true
					break
				}
				op.out.Version = p.Seq
				known[key] = p.Seq
			case err == nil:
				op.outcome, op.indefinite = string(w.Outcome), true
			case errors.As(err, &ref) && ref.Code == engine.CodeStale:
				op.outcome, op.out.Stale = "stale", true
				if v, ok := ref.Fields["current_version"].(uint64); ok {
					known[key] = v
				} else {
					known[key] = 0
				}
			case errors.As(err, &ref) && definitelyNotWritten[ref.Code]:
				op.outcome, op.definiteFail = "refused:"+string(ref.Code), true
			case errors.As(err, &ref):
				op.outcome, op.indefinite = "refused:"+string(ref.Code), true
			default:
				op.outcome, op.indefinite, op.err = "error", true, err.Error()
			}
			hist.add(op)
		}
		cancel()
	}
}

// TestItemModelCatchesAStaleRead: the model the nemesis run is checked
// with refuses a history in which a read returns a version older than one
// an earlier, completed update made, and a stale refusal of an if_match
// that was current; it accepts the same history read fresh.
func TestItemModelCatchesAStaleRead(t *testing.T) {
	create := porcupine.Operation{ClientId: 0, Input: opInput{Key: "A", Kind: opCreate}, Output: opOutput{Version: 3}, Call: 0, Return: 1}
	update := porcupine.Operation{ClientId: 0, Input: opInput{Key: "A", Kind: opUpdate, IfMatch: 3}, Output: opOutput{Version: 7}, Call: 2, Return: 3}
	staleRead := porcupine.Operation{ClientId: 1, Input: opInput{Key: "A", Kind: opRead}, Output: opOutput{Version: 3}, Call: 4, Return: 5}
	freshRead := porcupine.Operation{ClientId: 1, Input: opInput{Key: "A", Kind: opRead}, Output: opOutput{Version: 7}, Call: 4, Return: 5}
	wrongStale := porcupine.Operation{ClientId: 2, Input: opInput{Key: "A", Kind: opUpdate, IfMatch: 7}, Output: opOutput{Stale: true}, Call: 6, Return: 7}
	if r := porcupine.CheckOperationsTimeout(itemModel, []porcupine.Operation{create, update, staleRead}, time.Second); r != porcupine.Illegal {
		t.Fatalf("stale read: %s, want Illegal", r)
	}
	if r := porcupine.CheckOperationsTimeout(itemModel, []porcupine.Operation{create, update, freshRead, wrongStale}, time.Second); r != porcupine.Illegal {
		t.Fatalf("stale refusal of the current version: %s, want Illegal", r)
	}
	if r := porcupine.CheckOperationsTimeout(itemModel, []porcupine.Operation{create, update, freshRead}, time.Second); r != porcupine.Ok {
		t.Fatalf("fresh read: %s, want Ok", r)
	}
}
