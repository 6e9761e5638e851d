//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"
	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// childFaultTime is how long the faults run in TestChildFleetLinearizable.
const childFaultTime = 25 * time.Second

// childConns holds an MCP client per node of a child fleet, replaced when
// a node is restarted (on another port) and absent while it is down.
type childConns struct {
	mu    sync.Mutex
	conns []*client.Client
}

func (c *childConns) get(i int) *client.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.conns[i]
}

func (c *childConns) set(i int, cl *client.Client) {
	c.mu.Lock()
	c.conns[i] = cl
	c.mu.Unlock()
}

// TestChildFleetLinearizable: clients hop between three `crewlet serve`
// processes reading items at linearizable and updating them with
// if_match (the version read on one node sent to another), while one
// node at a time is SIGKILLed and restarted or SIGSTOPped and continued.
// Every answer goes into the history, refusals included: a stale refusal
// is legal only where the version named is not the item's at that point,
// so a node deciding from rows that are behind breaks the check. Every
// write is resolved from the quiesced log by the key its client minted:
// nothing acknowledged lost, nothing applied twice, nothing refused that
// landed, and the history linearizes.
func TestChildFleetLinearizable(t *testing.T) {
	// Mostly waiting (boots, faults, idle timeouts): it runs beside the
	// package's other long tests.
	t.Parallel()
	if testing.Short() {
		t.Skip("boots three processes and kills them")
	}
	runChildLinearizable(t, startChildFleet(t), true)
}

// TestChildFleetLinearizableOneReplica is TestChildFleetLinearizable on
// logs of one replica, where a linearizable read asks the log's one
// server where it ends rather than appending a barrier
// (statelog.EndReader): the nodes that do not hold the log ask across the
// cluster, and the one that does is killed and paused like the others.
func TestChildFleetLinearizableOneReplica(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("boots three processes and kills them")
	}
	runChildLinearizable(t, startChildFleetWith(t, "  replicas: 1\n"), false)
}

// runChildLinearizable is the body of the child fleets' linearizability
// tests, on the fleet f; its reads proved the log's end with barriers, or
// (barriers false) without appending one.
func runChildLinearizable(t *testing.T, f *childFleet, barriers bool) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	origin := time.Now()
	now := func() int64 { return int64(time.Since(origin)) }
	conns := &childConns{conns: make([]*client.Client, 3)}
	for i, s := range f.serves {
		conns.set(i, s.HTTPClient(t))
	}
	var hist fleettest.History
	c1 := conns.get(0)
	callRetry(t, c1, "create_project", map[string]any{"key": "LIN", "name": "Linearizability"})
	var keys []string
	for i := 0; i < 3; i++ {
		call := now()
		item := createdItem(t, c1, map[string]any{"project": "LIN", "title": fmt.Sprintf("start %d", i)})
		keys = append(keys, item["key"].(string))
		hist.Add(fleettest.HistOp{In: fleettest.OpInput{Key: keys[i], Kind: fleettest.OpCreate},
			Out: fleettest.OpOutput{Version: uint64(item["version"].(float64))}, Call: call, Ret: now(), Outcome: "applied"})
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	for cl := 0; cl < 4; cl++ {
		wg.Add(1)
		go func(cl int) {
			defer wg.Done()
			childClient(conns, cl, seed, keys, now, &hist, stop)
		}(cl)
	}
	faults, err := childNemesis(t, f, conns, seed, childFaultTime)
	if err != nil {
		close(stop)
		wg.Wait()
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // quiet traffic on the healed fleet
	close(stop)
	wg.Wait()
	end := now()

	msgs := readChildLog(t, f.clientURLs[0])
	appended := 0
	for _, m := range msgs {
		if m.Subject == statelog.BarrierSubject(engine.DomainTracker) {
			appended++
		}
	}
	if (appended > 0) != barriers {
		t.Errorf("the reads appended %d barriers to the log", appended)
	}
	v := fleettest.Check(&hist, fleettest.Landed(msgs), end, 2*time.Minute)
	t.Logf("seed %d: faults %s; %s", seed, faults, v)
	for text, n := range v.ErrTexts {
		t.Logf("%d× error without a code: %s", n, text)
	}
	for _, p := range v.Problems {
		t.Error(p)
	}
	if v.Result != porcupine.Ok {
		t.Fatalf("porcupine: %s", v.Result)
	}
	if v.Acked == 0 || v.Reads == 0 || v.Stale == 0 {
		t.Fatalf("the run proved little: %d acknowledged writes, %d reads, %d stale refusals", v.Acked, v.Reads, v.Stale)
	}
}

// childNemesis injects one fault at a time for dur: SIGKILL of a node and
// a restart on its data directory, or SIGSTOP and SIGCONT. It returns the
// faults it injected; every node is up and running when it returns.
func childNemesis(t *testing.T, f *childFleet, conns *childConns, seed int64, dur time.Duration) (string, error) {
	rng := rand.New(rand.NewSource(seed))
	kills, stops := 0, 0
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(1000+rng.Intn(2000)) * time.Millisecond)
		i := rng.Intn(3)
		down := time.Duration(500+rng.Intn(2500)) * time.Millisecond
		if rng.Intn(2) == 0 {
			stops++
			if err := f.serves[i].Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				return "", err
			}
			time.Sleep(down)
			if err := f.serves[i].Cmd.Process.Signal(syscall.SIGCONT); err != nil {
				return "", err
			}
			continue
		}
		kills++
		conns.set(i, nil)
		f.serves[i].Kill(t)
		time.Sleep(down)
		s, err := spawnServe(t, f.bin, f.dirs[i], "--config", f.configs[i])
		if err != nil {
			return "", fmt.Errorf("restart n%d: %v", i+1, err)
		}
		f.serves[i] = s
		conns.set(i, s.HTTPClient(t))
	}
	return fmt.Sprintf("kill_restart=%d stop_continue=%d", kills, stops), nil
}

// childClient reads and updates items on a node picked at random for each
// call until stop, recording what it saw. The version it sends as
// if_match is the last one it learnt, on whichever node.
func childClient(conns *childConns, cl int, seed int64, keys []string, now func() int64, hist *fleettest.History, stop chan struct{}) {
	rng := rand.New(rand.NewSource(seed + int64(cl)*7919))
	known := map[string]uint64{}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		n := rng.Intn(3)
		c := conns.get(n)
		if c == nil {
			time.Sleep(20 * time.Millisecond)
			continue
		}
		key := keys[rng.Intn(len(keys))]
		if rng.Intn(2) == 0 || known[key] == 0 {
			call := now()
			res, err := callOnce(c, "get_work_item", map[string]any{"key": key})
			op := fleettest.HistOp{Client: cl, Node: n, In: fleettest.OpInput{Key: key, Kind: fleettest.OpRead}, Call: call, Ret: now()}
			switch obj, refused := answerOf(res, err); {
			case err != nil:
				op.Outcome = "error"
			case refused != "":
				op.Outcome = "refused:" + refused
			default:
				v := uint64(obj["item"].(map[string]any)["version"].(float64))
				op.Outcome, op.Out.Version = "ok", v
				known[key] = v
			}
			hist.Add(op)
			continue
		}
		ifMatch := known[key]
		id, _ := uuid.NewV7()
		call := now()
		res, err := callOnce(c, "update_work_item", map[string]any{"key": key, "if_match": ifMatch,
			"title": fmt.Sprintf("c%d-%d", cl, i), "op_id": id.String()})
		op := fleettest.HistOp{Client: cl, Node: n, In: fleettest.OpInput{Key: key, Kind: fleettest.OpUpdate, IfMatch: ifMatch},
			Call: call, Ret: now(), OpID: id.String()}
		obj, refused := answerOf(res, err)
		a := fleettest.UpdateAnswer{Refused: engine.Code(refused), Err: err}
		a.Outcome, _ = obj["outcome"].(string)
		a.Position, _ = obj["position"].(string)
		if cur, ok := obj["current_version"].(float64); ok {
			a.CurrentVersion = uint64(cur)
		}
		if v := op.Record(a); v != 0 || a.Refused == engine.CodeStale {
			known[key] = v
		}
		hist.Add(op)
	}
}

// callOnce calls a tool once, with the test's per-call budget.
func callOnce(c *client.Client, name string, args map[string]any) (*mcpgo.CallToolResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	return c.CallTool(ctx, req)
}

// answerOf is a tool result as an object, and its refusal code when it is
// a refusal: the refusal object is the structured content, or the text
// content as JSON.
func answerOf(res *mcpgo.CallToolResult, err error) (map[string]any, string) {
	if err != nil || res == nil {
		return nil, ""
	}
	obj, _ := res.StructuredContent.(map[string]any)
	if obj == nil {
		for _, c := range res.Content {
			if tc, ok := mcpgo.AsTextContent(c); ok && json.Unmarshal([]byte(tc.Text), &obj) == nil {
				break
			}
		}
	}
	if !res.IsError {
		return obj, ""
	}
	code, _ := obj["refused"].(string)
	if code == "" {
		code = "unreadable"
	}
	return obj, code
}

// readChildLog reads the whole tracker log through a broker's client port,
// waiting out the seconds a healed cluster takes to elect its leaders.
func readChildLog(t *testing.T, url string) []statelog.StoredMsg {
	t.Helper()
	nc, err := nats.Connect(url, nats.Token(childFleetToken))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	retry := func(f func() error) {
		for {
			err := f()
			if err == nil {
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("reading the log: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	var s jetstream.Stream
	var info *jetstream.StreamInfo
	retry(func() (err error) {
		if s, err = js.Stream(ctx, "CREWLET_TRACKER_LOG"); err == nil {
			info, err = s.Info(ctx)
		}
		return err
	})
	var out []statelog.StoredMsg
	for seq := max(info.State.FirstSeq, 1); seq <= info.State.LastSeq; seq++ {
		var m *jetstream.RawStreamMsg
		retry(func() (err error) {
			m, err = s.GetMsg(ctx, seq)
			if err != nil && strings.Contains(err.Error(), "no message found") {
				return nil
			}
			return err
		})
		if m != nil {
			out = append(out, statelog.StoredMsg{Seq: m.Sequence, Subject: m.Subject, Data: m.Data})
		}
	}
	return out
}

// createdItem creates a work item and returns it as its node applied it.
// A create answered pending carries no row (its key is taken at apply
// time): the same call brought back with the answer's op_id is answered
// from the ledger with the item once the node has applied it.
func createdItem(t *testing.T, c *client.Client, args map[string]any) map[string]any {
	t.Helper()
	// A loaded fleet may refuse behind; the seeds say it clears on its own.
	m := callRetry(t, c, "create_work_item", args)
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if item, ok := m["item"].(map[string]any); ok && m["outcome"] == "applied" {
			return item
		}
		if m["outcome"] != "pending" || time.Now().After(deadline) {
			t.Fatalf("create_work_item(%v): %v", args, m)
		}
		time.Sleep(200 * time.Millisecond)
		again := map[string]any{"op_id": m["op_id"]}
		for k, v := range args {
			again[k] = v
		}
		m = callRetry(t, c, "create_work_item", again)
	}
}
