package statelog_test

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/crewlet/crewlet/engine"
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

func (h *harness) do(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	ctx := context.Background()
	switch td.Cmd {
	case "log":
		// The stream's topology and windows, before any node opens.
		if len(h.nodes) > 0 {
			td.Fatalf(t, "log must come before the first open")
		}
		o := statelogtest.Options{DedupFirst: td.HasArg("dedup_first")}
		if td.HasArg("window") {
			o.DuplicateWindow = durationArg(t, td, "window")
		}
		if td.HasArg("ack_wait") {
			o.AckWait = durationArg(t, td, "ack_wait")
		}
		h.stream = statelogtest.NewStream(o)
		return nil

	case "open":
		var name string
		td.ScanArgs(t, "node", &name)
		n := h.nodes[name]
		if n == nil {
			n = &ddNode{name: name, path: filepath.Join(h.dir, name+".db"), logs: &recorder{}, swept: map[string]bool{}, writeWait: *scriptBudget, readBudget: *scriptBudget, resume: make(chan struct{})}
			h.nodes[name] = n
		}
		if td.HasArg("write_wait") {
			n.writeWait = durationArg(t, td, "write_wait")
		}
		if td.HasArg("read_budget") {
			n.readBudget = durationArg(t, td, "read_budget")
		}
		if n.rep != nil {
			td.Fatalf(t, "node %s is open", name)
		}
		if err := h.open(ctx, n); err != nil {
			return err
		}
		say("%s: open", name)
		return nil

	case "stop":
		n := h.node(t, td)
		h.settle(t)
		n.stop()
		say("%s: stopped", n.name)
		return nil

	case "crash":
		// The process goes and comes back on the same file (or, with wipe,
		// on an empty one): it resumes from its rows, never its reader.
		n := h.node(t, td)
		h.settle(t)
		n.stop()
		if td.HasArg("wipe") {
			for _, suffix := range []string{"", "-wal", "-shm"} {
				if err := os.Remove(n.path + suffix); err != nil && !os.IsNotExist(err) {
					return err
				}
			}
		}
		if err := h.open(ctx, n); err != nil {
			return err
		}
		say("%s: reopened", n.name)
		return nil

	case "put", "add", "del":
		return h.write(t, td, say)

	case "evict", "readmit":
		// The node gate, appended through the write path: every record
		// target publishes after its eviction applies nowhere.
		n := h.node(t, td)
		var opName, target string
		td.ScanArgs(t, "op", &opName)
		td.ScanArgs(t, "target", &target)
		op, err := h.op(opName, td.Cmd, target, ledger.Digest("statelog."+td.Cmd, map[string]any{"node": target}))
		if err != nil {
			return err
		}
		w, err := n.rep.GateNode(ctx, op, target, td.Cmd == "evict")
		say("%s: %s", opName, written(w, err))
		return nil

	case "await":
		var op string
		td.ScanArgs(t, "op", &op)
		c := h.async[op]
		if c == nil {
			td.Fatalf(t, "no async write %s", op)
		}
		select {
		case line := <-c:
			delete(h.async, op)
			say("%s", line)
		case <-time.After(settleLimit()):
			return fmt.Errorf("%s did not answer within %v", op, settleLimit())
		}
		return nil

	case "wait":
		// Until the stream has seen this many appends in all: how a script
		// knows an async write reached the broker before it moves on.
		var n int
		td.ScanArgs(t, "publishes", &n)
		return h.waitAppends(n, say)

	case "read":
		return h.read(t, td, say)

	case "hold":
		h.stream.Hold(nodeArg(t, td))
		return nil
	case "release":
		// after=K: the moment the stream has seen K appends (an async
		// write's own), so none of the write's budget goes on the runner.
		if td.HasArg("after") {
			var n int
			td.ScanArgs(t, "after", &n)
			if err := h.waitAppends(n, say); err != nil {
				return err
			}
		}
		h.stream.Release(nodeArg(t, td))
		return nil
	case "deliver":
		count := 1
		td.MaybeScanArgs(t, "count", &count)
		n, err := h.stream.Deliver(nodeArg(t, td), count)
		if err == nil && n < count {
			say("delivered %d", n)
		}
		return err
	case "drop":
		var seq uint64
		td.ScanArgs(t, "seq", &seq)
		return h.stream.Drop(nodeArg(t, td), seq)
	case "redeliver":
		var from, to uint64
		td.ScanArgs(t, "from", &from)
		td.ScanArgs(t, "to", &to)
		return h.stream.Redeliver(nodeArg(t, td), from, to)
	case "lose-reader-acks":
		h.stream.LoseReaderAcks(nodeArg(t, td), !td.HasArg("off"))
		return nil
	case "lose-ack":
		// race=V: another writer's put of V lands on the same subject
		// right behind the append whose answer is lost.
		if td.HasArg("race") {
			var v string
			td.ScanArgs(t, "race", &v)
			h.stream.LoseAck(h.match(t, td), func(subject string) ([]byte, string) {
				data, err := encodeRecord(kindPut, "", "n9", kvPayload{Key: strings.TrimPrefix(subject, kvSubject("")), Value: v})
				if err != nil {
					t.Errorf("race: %v", err)
				}
				return data, ""
			})
			return nil
		}
		h.stream.LoseAck(h.match(t, td))
		return nil
	case "fail-publish":
		// Nothing lands; the publisher hears err: no_answer (the default,
		// an outcome nobody knows), no_quorum or log_full (refusals).
		var err error
		if td.HasArg("err") {
			var kind string
			td.ScanArgs(t, "err", &kind)
			switch kind {
			case "no_answer":
			case "no_quorum":
				err = fmt.Errorf("%w: the script's", statelog.ErrNoQuorum)
			case "log_full":
				err = fmt.Errorf("%w: the script's", statelog.ErrLogFull)
			default:
				td.Fatalf(t, "err=%s: one of no_answer, no_quorum, log_full", kind)
			}
		}
		h.stream.FailPublish(h.match(t, td), err)
		return nil
	case "fail-read":
		var op string
		td.ScanArgs(t, "op", &op)
		h.stream.FailRead(statelogtest.ReadOp(op), nil)
		return nil
	case "advance":
		if len(td.CmdArgs) != 1 {
			td.Fatalf(t, "advance <duration>")
		}
		d, err := time.ParseDuration(td.CmdArgs[0].Key)
		if err != nil {
			td.Fatalf(t, "%v", err)
		}
		h.stream.Advance(d)
		return nil

	case "pause-apply":
		// The applier's next batch waits inside its transaction, before
		// the commit, until resume-apply: what arrives meanwhile is one
		// batch after it.
		n := h.node(t, td)
		n.mu.Lock()
		n.paused = true
		n.mu.Unlock()
		return nil
	case "resume-apply":
		h.node(t, td).resumeApply()
		return nil
	case "fail-commit":
		n := h.node(t, td)
		count := 1
		td.MaybeScanArgs(t, "count", &count)
		n.mu.Lock()
		n.failCommits += count
		n.mu.Unlock()
		return nil

	case "append":
		// A record put on the log by hand, not through a write: another
		// writer's, or a second copy of an operation the duplicate window
		// no longer catches. value= appends a put, by= an add.
		var key, opName string
		writer := "n9"
		td.ScanArgs(t, "key", &key)
		td.MaybeScanArgs(t, "op", &opName)
		td.MaybeScanArgs(t, "writer", &writer)
		p, kind := kvPayload{Key: key}, kindPut
		if td.HasArg("by") {
			td.ScanArgs(t, "by", &p.By)
			kind = kindAdd
		} else {
			td.ScanArgs(t, "value", &p.Value)
		}
		return h.append(ctx, say, kind, p, opName, writer)

	case "sweep":
		// The ledger's 30-day sweep at the stream's clock. The rows it
		// takes are the sweep's, not a fault: the invariant stops
		// expecting them.
		n := h.node(t, td)
		before, err := readState(ctx, n.db)
		if err != nil {
			return err
		}
		deleted, err := ledger.Sweep(ctx, n.db, h.stream.Now())
		if err != nil {
			return err
		}
		after, err := readState(ctx, n.db)
		if err != nil {
			return err
		}
		for op := range before.model.ledger {
			if _, ok := after.model.ledger[op]; !ok {
				n.swept[op] = true
			}
		}
		say("%s: swept %d", n.name, deleted)
		return nil

	case "rows", "ledger", "anchors", "checkpoint":
		n := h.node(t, td)
		st, err := readState(ctx, n.db)
		if err != nil {
			return err
		}
		h.show(td.Cmd, st, say)
		return nil

	case "reader":
		name := nodeArg(t, td)
		r := h.stream.Reader(name)
		say("%s: delivered=%d ack_floor=%d ack_pending=%v backlog=%d%s", name, r.Delivered, r.AckFloor, r.AckPending, r.Backlog, flags(r))
		return nil

	case "publishes":
		// The appends since the last publishes, as the broker answered.
		all := h.stream.Attempts()
		for _, a := range all[h.attempts:] {
			say("%s", h.attemptLine(a))
		}
		if len(all) == h.attempts {
			say("none")
		}
		h.attempts = len(all)
		return nil

	case "messages":
		for _, m := range h.stream.Messages() {
			say("%d %s %s", m.Seq, shortSubject(m.Subject), h.opName(m.MsgID))
		}
		return nil

	case "logs":
		n := h.node(t, td)
		for _, l := range n.logs.take() {
			say("%s", l)
		}
		return nil
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// waitAppends waits until the stream has seen n appends and prints the
// n-th, so a script that counted wrong shows it.
func (h *harness) waitAppends(n int, say func(string, ...any)) error {
	deadline := time.Now().Add(settleLimit())
	for {
		if all := h.stream.Attempts(); len(all) >= n {
			say("%s", h.attemptLine(all[n-1]))
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the stream saw %d appends, not %d", len(h.stream.Attempts()), n)
		}
		time.Sleep(time.Millisecond)
	}
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
		RetryBudget: 5 * time.Second, WriteWait: n.writeWait, ReadBudget: n.readBudget, PublishTimeout: time.Second,
		BeforeCommit: func(*sql.Tx, uint64) error { return n.beforeCommit() },
	})
	if err != nil {
		db.Close()
		return err
	}
	n.db, n.rep = db, rep
	return nil
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
	n.mu.Unlock()
	if parked {
		return true
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
		want := replayKV(h.stream.Messages(), st.seq)
		for op := range n.swept {
			delete(want.ledger, op)
		}
		if d := want.diff(st.model); d != "" {
			out = append(out, fmt.Sprintf("%s at checkpoint %d: %s", n.name, st.seq, d))
		}
		if st.appliedThrough != st.seq {
			out = append(out, fmt.Sprintf("%s: applied_through %d, checkpoint %d", n.name, st.appliedThrough, st.seq))
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

func (h *harness) opName(msgID string) string {
	if msgID == "" {
		return "-"
	}
	if n, ok := h.opNames[msgID]; ok {
		return n
	}
	return msgID
}

func (h *harness) write(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	n := h.node(t, td)
	var opName, key string
	td.ScanArgs(t, "op", &opName)
	td.ScanArgs(t, "key", &key)
	p := kvPayload{Key: key}
	args := map[string]any{"key": key}
	kind := "kv." + td.Cmd
	switch td.Cmd {
	case "put":
		td.ScanArgs(t, "value", &p.Value)
		args["value"] = p.Value
	case "add":
		td.ScanArgs(t, "by", &p.By)
		args["by"] = p.By
	}
	var ifMatch *uint64
	if td.HasArg("if_match") {
		var v uint64
		td.ScanArgs(t, "if_match", &v)
		ifMatch = &v
		args["if_match"] = v
	}
	op, err := h.op(opName, td.Cmd, key, ledger.Digest(kind, args))
	if err != nil {
		return err
	}
	rep := n.rep
	do := func() string {
		w, err := rep.Write(context.Background(), op, kvDecide(kind, p, ifMatch))
		return opName + ": " + written(w, err)
	}
	defer h.warmed()
	if td.HasArg("async") {
		if h.async[opName] != nil {
			td.Fatalf(t, "%s is already in flight", opName)
		}
		c := make(chan string, 1)
		h.async[opName] = c
		go func() { c <- do() }()
		return nil
	}
	say("%s", do())
	return nil
}

// written renders a write's answer: the outcome and where it landed, or
// the refusal's code.
func written(w statelog.Written, err error) string {
	if err != nil {
		if ref, ok := engine.AsRefusal(err); ok {
			s := "refused " + string(ref.Code)
			if ref.Position != nil {
				s += fmt.Sprintf(" at %d", ref.Position.Seq)
			}
			if w, ok := ref.Fields["writer"]; ok {
				s += fmt.Sprintf(" (writer %v)", w)
			}
			return s
		}
		return "error: " + err.Error()
	}
	s := string(w.Outcome)
	if w.Outcome != engine.Unknown {
		s += fmt.Sprintf(" at %d", w.Seq)
	}
	if w.Replayed {
		s += " (replayed)"
	}
	if w.Unvouched {
		s += " (unvouched)"
	}
	return s
}

func (h *harness) read(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	n := h.node(t, td)
	var key, level string
	td.ScanArgs(t, "key", &key)
	level = string(engine.Stale)
	td.MaybeScanArgs(t, "level", &level)
	opts := engine.ReadOptions{Level: engine.ReadLevel(level)}
	if td.HasArg("min") {
		var seq uint64
		td.ScanArgs(t, "min", &seq)
		p := n.rep.Position(seq)
		opts.MinPosition = &p
	}
	var row kvRow
	var info engine.ReadInfo
	read := func(ctx context.Context) error {
		var err error
		info, err = n.rep.ReadObject(ctx, opts, readKV(key, &row))
		return err
	}
	var err error
	if td.HasArg("settle") {
		err = n.rep.Settle(context.Background(), read)
	} else {
		err = read(context.Background())
	}
	switch {
	case err == nil:
		say("%s=%s version=%d seen_through=%d level=%s", key, row.Value, row.Version, info.SeenThrough.Seq, info.Level)
	default:
		say("%s: %s", key, written(statelog.Written{}, err))
	}
	return nil
}

func (h *harness) append(ctx context.Context, say func(string, ...any), kind string, p kvPayload, opName, writer string) error {
	var opID string
	if opName != "" {
		op, err := h.op(opName, strings.TrimPrefix(kind, "kv."), p.Key, "")
		if err != nil {
			return err
		}
		opID = op.ID.String()
	}
	data, err := encodeRecord(kind, opID, writer, p)
	if err != nil {
		return err
	}
	ack, err := h.stream.Log(writer).Publish(ctx, kvSubject(p.Key), data, opID, nil)
	if err != nil {
		return err
	}
	if ack.Duplicate {
		say("duplicate of %d", ack.Seq)
	} else {
		say("appended at %d", ack.Seq)
	}
	return nil
}

func (h *harness) show(what string, st kvState, say func(string, ...any)) {
	switch what {
	case "checkpoint":
		say("seq=%d applied_through=%d", st.seq, st.appliedThrough)
	case "rows":
		keys := sortedKeys(st.model.rows)
		for _, k := range keys {
			r := st.model.rows[k]
			say("%s=%s version=%d", k, r.Value, r.Version)
		}
		if len(keys) == 0 {
			say("none")
		}
	case "ledger":
		type line struct {
			op  string
			seq uint64
		}
		var ls []line
		for op, seq := range st.model.ledger {
			ls = append(ls, line{h.opName(op), seq})
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].seq < ls[j].seq })
		for _, l := range ls {
			say("%s at %d", l.op, l.seq)
		}
		if len(ls) == 0 {
			say("none")
		}
	case "anchors":
		for _, s := range sortedKeys(st.model.anchors) {
			say("%s at %d", shortSubject(s), st.model.anchors[s])
		}
	}
}

func (h *harness) attemptLine(a statelogtest.Attempt) string {
	s := fmt.Sprintf("#%d %s %s %s", a.N, a.Node, shortSubject(a.Subject), h.opName(a.MsgID))
	if a.Expect != nil {
		s += fmt.Sprintf(" expect=%d", *a.Expect)
	}
	switch a.Outcome {
	case "ok":
		s += fmt.Sprintf(": ok at %d", a.Seq)
	case "duplicate":
		s += fmt.Sprintf(": duplicate of %d", a.Seq)
	case "wrong_last":
		s += fmt.Sprintf(": wrong last (%d)", a.Last)
	default:
		s += ": " + a.Outcome
	}
	if a.AckLost {
		s += ", ack lost"
	}
	return s
}

// match selects the appends of writes (those carrying an op id), only
// those on key's subject, or (barrier) only barriers.
func (h *harness) match(t *testing.T, td *datadriven.TestData) statelogtest.Match {
	if td.HasArg("barrier") {
		subject := statelog.BarrierSubject(kvName)
		return func(s, _ string) bool { return s == subject }
	}
	if td.HasArg("key") {
		var key string
		td.ScanArgs(t, "key", &key)
		subject := kvSubject(key)
		return func(s, _ string) bool { return s == subject }
	}
	return func(_, msgID string) bool { return msgID != "" }
}

func nodeArg(t *testing.T, td *datadriven.TestData) string {
	var name string
	td.ScanArgs(t, "node", &name)
	return name
}

func durationArg(t *testing.T, td *datadriven.TestData, key string) time.Duration {
	var s string
	td.ScanArgs(t, key, &s)
	d, err := time.ParseDuration(s)
	if err != nil {
		td.Fatalf(t, "%s: %v", key, err)
	}
	return d
}

func flags(r statelogtest.ReaderState) string {
	var f []string
	if r.Held {
		f = append(f, "held")
	}
	if r.AcksLost {
		f = append(f, "acks lost")
	}
	if !r.Open {
		f = append(f, "closed")
	}
	if len(f) == 0 {
		return ""
	}
	return " (" + strings.Join(f, ", ") + ")"
}

func shortSubject(s string) string {
	return strings.TrimPrefix(s, statelog.SubjectPrefix(kvName))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// recorder keeps a node's log lines: the write path's and the applier's
// events, printed by the logs command.
type recorder struct {
	mu    sync.Mutex
	lines []string
	seen  int
	n     map[string]int
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "drift", engine.LogGate:
			line += " " + a.Key + "=" + a.Value.String()
		}
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[rec.Message]++
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// take returns the lines since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.lines[r.seen:])
	r.seen = len(r.lines)
	return out
}

func (r *recorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[msg]
}
