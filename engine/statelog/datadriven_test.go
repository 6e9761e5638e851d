package statelog_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"
	"github.com/google/uuid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/statelog/statelogtest"
	"github.com/crewlet/crewlet/ledger"
)

// TestScripts runs the applier and the write path against an in-memory log
// that can hold, drop, repeat and reorder deliveries and lose or fail
// appends (statelogtest), on real SQLite: the scripts in testdata/ pin
// what a write answers and what the rows hold under each fault, beside
// the real-broker tests in engine/node and engine/fleettest. After every
// command each open node's checkpoint, rows, ledger and anchors are held
// to a model replayed from the log up to its checkpoint. Rewrite the
// expected output with -rewrite; the command reference is in
// testdata/README.md.
func TestScripts(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "*.txt"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no scripts in testdata: %v", err)
	}
	// All at once, whatever -parallel says: a script spends most of its
	// time waiting out a held node's budgets, not on a CPU, and t.Run may
	// be called from several goroutines at a time.
	var wg sync.WaitGroup
	for _, path := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t.Run(strings.TrimSuffix(filepath.Base(path), ".txt"), func(t *testing.T) {
				h := newHarness(t)
				datadriven.RunTest(t, path, h.run)
			})
		}()
	}
	wg.Wait()
}

// The budgets a script's nodes run with unless it says otherwise. A held
// node spends a whole one on every pending or behind answer, so they are
// as small as they can be while an unheld node never misses one: an apply
// takes ~5ms under -race (~15ms the first), but on a machine running other
// tests a first apply was seen to take over a second. Scripts keep to two
// such answers each, so the suite takes about two budgets.
//
// On a machine loaded far past its CPUs even that is short: pass
// -script-budget (go test ./engine/statelog -run TestScripts
// -script-budget=6s) rather than read its pending answers as bugs.
var scriptBudget = flag.Duration("script-budget", 1500*time.Millisecond, "the write wait and read budget of each node a statelog script opens without its own")

// settleLimit bounds every wait of the runner itself (appliers to commit
// what they were handed, an async write to answer); it is a deadline for a
// stuck test, never what a script asserts. It grows with the budget.
func settleLimit() time.Duration { return max(10*time.Second, 8**scriptBudget) }

// coldStarts admits two scripts at a time into their cold start (opening
// their databases, migrating them, a first apply on fresh connections):
// run all at once under -race they were seen to push a first apply past
// a second, out of its write wait. A script gives its place up when its
// first write answers.
var coldStarts = make(chan struct{}, 2)

type harness struct {
	t      *testing.T
	warm   sync.Once
	dir    string
	stream *statelogtest.Stream
	nodes  map[string]*ddNode
	ops    map[string]*ddOp
	// opNames names an op id by the script's name for it.
	opNames  map[string]string
	async    map[string]chan string
	attempts int // appends already printed by publishes
}

type ddOp struct {
	id ledger.OpID
}

// ddNode is one node: its SQLite file, its replica, the seams of its
// applier's commit (pause, fail) and its log lines.
type ddNode struct {
	name       string
	path       string
	db         *sql.DB
	rep        *statelog.Replica
	logs       *recorder
	writeWait  time.Duration
	readBudget time.Duration
	// election is the log's ElectionBound (open's election=D; 0 unset).
	election time.Duration
	// retryBudget is how long the applier retries a failure before it is
	// faulted (open's retry_budget=D; 5s unset).
	retryBudget time.Duration
	// formatVersion is the newest record format the node's build reads
	// (open's format=N; 0: this build's, record.FormatVersion).
	formatVersion int

	// swept holds the ledger rows a sweep took.
	swept map[string]bool

	mu          sync.Mutex
	paused      bool
	blocked     bool
	resume      chan struct{}
	failCommits int
}

func newHarness(t *testing.T) *harness {
	h := &harness{t: t, dir: t.TempDir(), stream: statelogtest.NewStream(statelogtest.Options{}),
		nodes: map[string]*ddNode{}, ops: map[string]*ddOp{}, opNames: map[string]string{}, async: map[string]chan string{}}
	coldStarts <- struct{}{}
	t.Cleanup(h.close)
	return h
}

// warmed gives the script's cold-start place up.
func (h *harness) warmed() { h.warm.Do(func() { <-coldStarts }) }

func (h *harness) close() {
	h.warmed()
	for name, c := range h.async {
		select {
		case <-c:
		case <-time.After(settleLimit()):
			h.t.Errorf("async write %s never answered", name)
		}
	}
	for _, n := range h.nodes {
		n.resumeApply()
		n.stop()
	}
}

// run is one command. Every command ends with the open nodes' appliers
// settled (each has committed and acknowledged what it was handed; an
// async write may still be running), the readers' events printed, and
// the invariant checked.
func (h *harness) run(t *testing.T, td *datadriven.TestData) string {
	var out strings.Builder
	say := func(format string, args ...any) { fmt.Fprintf(&out, format+"\n", args...) }
	if err := h.do(t, td, say); err != nil {
		say("error: %v", err)
	}
	h.settle(t)
	for _, e := range h.stream.TakeEvents() {
		say("» %s", e)
	}
	for _, v := range h.check() {
		t.Errorf("%s: %s", td.Pos, v)
		say("INVARIANT: %s", v)
	}
	return out.String()
}

func (h *harness) node(t *testing.T, td *datadriven.TestData) *ddNode {
	var name string
	td.ScanArgs(t, "node", &name)
	n := h.nodes[name]
	if n == nil || n.rep == nil {
		td.Fatalf(t, "node %s is not open", name)
	}
	return n
}

// open opens n's replica on its file.
func (h *harness) open(ctx context.Context, n *ddNode) error {
	db, err := sqlite.Open(n.path, 5)
	if err != nil {
		return err
	}
	rep, err := statelog.Open(ctx, statelog.Config{
		Node: n.name, DB: db, Log: h.stream.Log(n.name), Domain: kvDomain{}, Clock: h.stream,
		Logger: slog.New(n.logs), Publishing: true,
		RetryBudget: n.retryBudget, WriteWait: n.writeWait, ReadBudget: n.readBudget, PublishTimeout: time.Second,
		ElectionBound: n.election, FormatVersion: n.format(),
		BeforeCommit: func(*sql.Tx, uint64) error { return n.beforeCommit() },
	})
	if err != nil {
		db.Close()
		return err
	}
	n.db, n.rep = db, rep
	return nil
}

// format is the newest record format the node's build reads.
func (n *ddNode) format() int {
	if n.formatVersion == 0 {
		return record.FormatVersion
	}
	return n.formatVersion
}

func (n *ddNode) stop() {
	if n.rep == nil {
		return
	}
	n.rep.Close()
	n.db.Close()
	n.rep, n.db = nil, nil
}

// beforeCommit is the applier's commit seam: a failure the script asked
// for (the batch rolls back and is retried in place), or a pause.
func (n *ddNode) beforeCommit() error {
	n.mu.Lock()
	if n.failCommits > 0 {
		n.failCommits--
		n.mu.Unlock()
		return fmt.Errorf("the script failed this commit")
	}
	if !n.paused {
		n.mu.Unlock()
		return nil
	}
	n.blocked = true
	resume := n.resume
	n.mu.Unlock()
	<-resume
	n.mu.Lock()
	n.blocked = false
	n.mu.Unlock()
	return nil
}

func (n *ddNode) resumeApply() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.paused {
		n.paused = false
		close(n.resume)
		n.resume = make(chan struct{})
	}
}

// settled: the applier has committed and acknowledged everything its
// reader handed it, and a run of retries it logged is over; or it is
// paused at its commit on the script's word.
func (h *harness) settledNode(n *ddNode) bool {
	n.mu.Lock()
	parked := n.paused && n.blocked
	failing := n.failCommits > 0
	n.mu.Unlock()
	if parked || n.logs.count(engine.EvApplierStopped) > 0 {
		return true // parked by the script, or stopped for good
	}
	if failing && n.logs.count(engine.EvApplyFaulted) > n.logs.count(engine.EvApplyRecovered) {
		return true // retrying the script's failures past its budget: faulted
	}
	return h.stream.Idle(n.name) && n.logs.count(engine.EvApplyRetrying) == n.logs.count(engine.EvApplyRecovered)
}

func (h *harness) settle(t *testing.T) {
	deadline := time.Now().Add(settleLimit())
	for _, n := range h.sorted() {
		if n.rep == nil {
			continue
		}
		for !h.settledNode(n) {
			if time.Now().After(deadline) {
				t.Fatalf("%s's applier did not settle within %v: %+v", n.name, settleLimit(), h.stream.Reader(n.name))
			}
			time.Sleep(time.Millisecond)
		}
	}
}

func (h *harness) sorted() []*ddNode {
	var out []*ddNode
	for _, n := range h.nodes {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// check holds each open node to the model: its rows, ledger and anchors
// are exactly what the log up to its checkpoint makes them (read in the
// snapshot the checkpoint is read in), and its reader never acknowledged
// past its checkpoint.
func (h *harness) check() []string {
	var out []string
	for _, n := range h.sorted() {
		if n.rep == nil {
			continue
		}
		// The ack floor first: an ack follows its commit, so a floor read
		// before the checkpoint can never be past it, even while the
		// applier goes on (an async write's records).
		floor := h.stream.Reader(n.name).AckFloor
		st, err := readState(context.Background(), n.db)
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", n.name, err))
			continue
		}
		// The stream after the snapshot: it only grows, so it holds every
		// record the checkpoint covers.
		want := replayKV(h.stream.Messages(), st.seq, n.format())
		for op := range n.swept {
			delete(want.ledger, op)
		}
		if d := want.diff(st.model); d != "" {
			out = append(out, fmt.Sprintf("%s at checkpoint %d: %s", n.name, st.seq, d))
		}
		wantThrough := st.seq
		if first := want.firstRetained(); first > 0 {
			wantThrough = first - 1
		}
		if st.appliedThrough != wantThrough {
			out = append(out, fmt.Sprintf("%s: applied_through %d, want %d (checkpoint %d)", n.name, st.appliedThrough, wantThrough, st.seq))
		}
		if floor > st.seq {
			out = append(out, fmt.Sprintf("%s: the reader acknowledged %d, past the checkpoint %d", n.name, floor, st.seq))
		}
	}
	return out
}

// op returns the script's operation name as an op id, made on first use
// the way a seat derives one (unit, instant, verb, object, digest), so
// every run names it alike. A later use keeps the id and is vouched for
// only where its arguments are the first use's.
func (h *harness) op(name, verb, object, digest string) (statelog.Op, error) {
	if o := h.ops[name]; o != nil {
		return statelog.Op{ID: o.id, Digest: digest, Vouched: ledger.Matches(o.id, digest)}, nil
	}
	id, err := ledger.Derive("dd-"+name, h.stream.Now(), verb, object, digest, 0)
	if err != nil {
		return statelog.Op{}, err
	}
	h.ops[name] = &ddOp{id: id}
	h.opNames[id.String()] = name
	return statelog.Op{ID: id, Digest: digest, Vouched: true}, nil
}

// opFrom is op for a write whose id comes from outside the engine
// (write's foreign or client argument), made on first use like op:
// foreign is an id the engine did not mint (a version 4 UUID, no
// instant); client is a key the client minted itself at the stream's
// clock (a v7 UUID in its client form, ledger.ForCall's). Either is the
// caller's word for this call, so vouched for.
func (h *harness) opFrom(name, form, verb, object, digest string) (statelog.Op, error) {
	if o := h.ops[name]; o != nil {
		return statelog.Op{ID: o.id, Digest: digest, Vouched: true}, nil
	}
	var id ledger.OpID
	switch form {
	case "foreign":
		id = ledger.OpID{UUID: uuid.New(), Verb: verb, Object: object}
	case "client":
		u, err := ledger.NewV7At(h.stream.Now())
		if err != nil {
			return statelog.Op{}, err
		}
		call, err := ledger.ForCall(h.stream.Now(), u.String(), "", time.Time{}, 0, verb, object, digest)
		if err != nil {
			return statelog.Op{}, err
		}
		id = call.ID
	default:
		return h.op(name, verb, object, digest)
	}
	h.ops[name] = &ddOp{id: id}
	h.opNames[id.String()] = name
	return statelog.Op{ID: id, Digest: digest, Vouched: true}, nil
}

func (h *harness) opName(msgID string) string {
	if msgID == "" {
		return "-"
	}
	if n, ok := h.opNames[msgID]; ok {
		return n
	}
	return msgID
}
