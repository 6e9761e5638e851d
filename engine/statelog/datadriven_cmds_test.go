package statelog_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/statelog/statelogtest"
	"github.com/crewlet/crewlet/ledger"
)

// scriptCommands maps every command of the scripts to the method that
// runs its group (testdata/README.md is the reference).
var scriptCommands = map[string]func(h *harness, t *testing.T, td *datadriven.TestData, say func(string, ...any)) error{
	"log":              (*harness).lifecycle,
	"open":             (*harness).lifecycle,
	"stop":             (*harness).lifecycle,
	"crash":            (*harness).lifecycle,
	"put":              (*harness).write,
	"add":              (*harness).write,
	"del":              (*harness).write,
	"purge":            (*harness).write,
	"walk":             (*harness).walk,
	"evict":            (*harness).gate,
	"readmit":          (*harness).gate,
	"await":            (*harness).waitFor,
	"wait":             (*harness).waitFor,
	"read":             (*harness).read,
	"hold":             (*harness).readerFault,
	"release":          (*harness).readerFault,
	"deliver":          (*harness).readerFault,
	"drop":             (*harness).readerFault,
	"redeliver":        (*harness).readerFault,
	"lose-reader-acks": (*harness).readerFault,
	"lose-ack":         (*harness).logFault,
	"fail-publish":     (*harness).logFault,
	"fail-read":        (*harness).logFault,
	"advance":          (*harness).logFault,
	"pause-apply":      (*harness).applyFault,
	"resume-apply":     (*harness).applyFault,
	"fail-commit":      (*harness).applyFault,
	"append":           (*harness).appendRecord,
	"append-gate":      (*harness).appendGate,
	"append-mark":      (*harness).appendMark,
	"sweep":            (*harness).sweep,
	"floor":            (*harness).floor,
	"forget":           (*harness).forget,
	"rows":             (*harness).inspect,
	"ledger":           (*harness).inspect,
	"anchors":          (*harness).inspect,
	"checkpoint":       (*harness).inspect,
	"replication":      (*harness).inspect,
	"reader":           (*harness).inspect,
	"publishes":        (*harness).inspect,
	"messages":         (*harness).inspect,
	"logs":             (*harness).inspect,
}

// do runs one command.
func (h *harness) do(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	if cmd := scriptCommands[td.Cmd]; cmd != nil {
		return cmd(h, t, td, say)
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// lifecycle runs log (the stream's shape, before any node opens), and
// open, stop and crash: a node's life.
func (h *harness) lifecycle(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
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
			n = &ddNode{name: name, path: filepath.Join(h.dir, name+".db"), logs: &recorder{}, swept: map[string]bool{}, writeWait: *scriptBudget, readBudget: *scriptBudget,
				retryBudget: 5 * time.Second, resume: make(chan struct{})}
			h.nodes[name] = n
		}
		n.configure(t, td)
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
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// configure reads open's options for n: its budgets, its log's election
// bound and the build it opens with.
func (n *ddNode) configure(t *testing.T, td *datadriven.TestData) {
	if td.HasArg("write_wait") {
		n.writeWait = durationArg(t, td, "write_wait")
	}
	if td.HasArg("read_budget") {
		n.readBudget = durationArg(t, td, "read_budget")
	}
	if td.HasArg("retry_budget") {
		n.retryBudget = durationArg(t, td, "retry_budget")
	}
	if td.HasArg("election") {
		n.election = durationArg(t, td, "election")
	}
	if td.HasArg("format") {
		// The build it opens with: one reading formats up to N (an
		// older build, or the next one after an upgrade).
		td.ScanArgs(t, "format", &n.formatVersion)
	}
}

// gate runs evict and readmit: the node gate, appended through the write
// path: every record target publishes after its eviction applies nowhere.
func (h *harness) gate(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	ctx := context.Background()
	n := h.node(t, td)
	var opName, target string
	td.ScanArgs(t, "op", &opName)
	td.ScanArgs(t, "target", &target)
	op, err := h.op(opName, td.Cmd, target, ledger.Digest("statelog."+td.Cmd, map[string]any{"node": target}))
	if err != nil {
		return err
	}
	w, err := statelog.GateNode(n.rep, ctx, op, target, td.Cmd == "evict")
	say("%s: %s", opName, written(w, err))
	return nil
}

// walk runs walk: a gesture under op, a put of value on each of keys in
// order (statelog.Walk, as the tracker's moves and merges write theirs),
// each step under the op id derived from the gesture's and its key. It
// prints each step's answer, then where the walk stopped.
func (h *harness) walk(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	ctx := context.Background()
	n := h.node(t, td)
	var opName, keys, value string
	td.ScanArgs(t, "op", &opName)
	td.ScanArgs(t, "keys", &keys)
	td.ScanArgs(t, "value", &value)
	op, err := h.op(opName, "walk", "kv", ledger.Digest("kv.walk", map[string]any{"keys": keys, "value": value}))
	if err != nil {
		return err
	}
	defer h.warmed()
	w := statelog.NewWalk(op)
	for _, key := range strings.Split(keys, ",") {
		sid, err := ledger.Step(op.ID, "put", key)
		if err != nil {
			return err
		}
		h.opNames[sid.String()] = opName + "/" + key
		p := kvPayload{Key: key, Value: value}
		var answer statelog.Written
		ok, err := w.Step(ctx, n.rep, "put", key, key, func(ctx context.Context, op statelog.Op) (statelog.Written, error) {
			var err error
			answer, err = n.rep.Write(ctx, op, kvDecide("kv.put", p, nil))
			return answer, err
		})
		say("%s/%s: %s", opName, key, written(answer, err))
		if !ok {
			say("%s: stopped at %s (%s)", opName, w.Stop.Label, w.Outcome)
			return nil
		}
	}
	say("%s: done", opName)
	return nil
}

// waitFor runs await (an async write's answer) and wait (a count of
// appends the stream has seen).
func (h *harness) waitFor(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	switch td.Cmd {
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
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// readerFault runs the faults of a node's reader: what it is handed and
// when (hold, release, deliver, drop, redeliver) and whether its acks
// reach the stream (lose-reader-acks).
func (h *harness) readerFault(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	switch td.Cmd {
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
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// logFault runs the faults of the log, what it answers a publisher or a
// reader (lose-ack, fail-publish, fail-read), and advance, its clock.
func (h *harness) logFault(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	switch td.Cmd {
	case "lose-ack":
		// race=V: another writer's put of V lands on the same subject
		// right behind the append whose answer is lost.
		if td.HasArg("race") {
			var v string
			td.ScanArgs(t, "race", &v)
			h.stream.LoseAck(h.match(t, td), func(subject string) ([]byte, string) {
				data, err := encodeRecord(kindPut, "", "n9", kvPayload{Key: strings.TrimPrefix(subject, kvSubject("")), Value: v}, 1)
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
		// err=refused: an answer that is not worth asking again for (the
		// default is no answer at all, which a lost append's resolution
		// asks again for, within the publish timeout).
		var op string
		td.ScanArgs(t, "op", &op)
		var err error
		if td.HasArg("err") {
			err = errors.New("the broker refused the read (statelogtest)")
		}
		h.stream.FailRead(statelogtest.ReadOp(op), err)
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
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// applyFault runs the seams of a node's applier at its commit:
// pause-apply, resume-apply, fail-commit.
func (h *harness) applyFault(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	switch td.Cmd {
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
		if td.HasArg("off") {
			n.failCommits = 0 // the next retry commits
		}
		n.mu.Unlock()
		return nil
	}
	td.Fatalf(t, "unknown command %q", td.Cmd)
	return nil
}

// appendRecord runs append: a record put on the log by hand, not through
// a write: another writer's, or a second copy of an operation the
// duplicate window no longer catches. value= appends a put, by= an add.
func (h *harness) appendRecord(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	ctx := context.Background()
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
	version := 1
	td.MaybeScanArgs(t, "version", &version)
	if td.HasArg("scopeless") {
		// No build reads its envelope, its scope included.
		return h.publish(ctx, say, p.Key, scopelessRecord(kind), "", writer)
	}
	return h.append(ctx, say, kind, p, opName, writer, version)
}

// sweep runs the ledger's 30-day sweep at the stream's clock. The rows it
// takes are the sweep's, not a fault: the invariant stops expecting them.
func (h *harness) sweep(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	ctx := context.Background()
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
}

// floor runs floor: N's heartbeat hands it the log's published trim
// floor (Replica.SetFloor): every record at or below through is one the
// trim may have removed.
func (h *harness) floor(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	var through uint64
	td.ScanArgs(t, "through", &through)
	h.node(t, td).rep.SetFloor(through, nil)
	return nil
}

// forget runs forget: N's ledger loses op's row, and nothing else (no
// sweep, so no watermark says it may have): the row a write's answer
// cannot find. The invariant stops expecting it, as after a sweep.
func (h *harness) forget(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	n := h.node(t, td)
	var opName string
	td.ScanArgs(t, "op", &opName)
	o := h.ops[opName]
	if o == nil {
		td.Fatalf(t, "no op %s", opName)
	}
	res, err := n.db.ExecContext(context.Background(), `DELETE FROM statelog_ledger WHERE op_id = ?`, o.id.String())
	if err != nil {
		return err
	}
	deleted, _ := res.RowsAffected()
	n.swept[o.id.String()] = true
	say("%s: forgot %d", n.name, deleted)
	return nil
}

// inspect runs the commands that print: a node's rows, ledger, anchors
// and checkpoint, its reader, the stream's publishes and messages, and a
// node's logs.
func (h *harness) inspect(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	ctx := context.Background()
	switch td.Cmd {
	case "rows", "ledger", "anchors", "checkpoint":
		n := h.node(t, td)
		st, err := readState(ctx, n.db)
		if err != nil {
			return err
		}
		h.show(td.Cmd, st, say)
		return nil

	case "replication":
		// What the node publishes about its own replication (the
		// retention report's row): its checkpoint and the prefix applied.
		st := h.node(t, td).rep.Replication(ctx)
		say("seen_through=%d applied_through=%d complete=%v level=%s", st.SeenThrough.Seq, st.AppliedThrough.Seq, st.Complete, st.Level)
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
	form := ""
	for _, f := range []string{"foreign", "client"} {
		if td.HasArg(f) {
			form = f
		}
	}
	op, err := h.opFrom(opName, form, td.Cmd, key, ledger.Digest(kind, args))
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
	case err == nil && td.HasArg("lag"):
		say("%s=%s version=%d seen_through=%d level=%s lag=%s", key, row.Value, row.Version, info.SeenThrough.Seq, info.Level, lagOf(info.Lag))
	case err == nil:
		say("%s=%s version=%d seen_through=%d level=%s", key, row.Value, row.Version, info.SeenThrough.Seq, info.Level)
	default:
		say("%s: %s", key, written(statelog.Written{}, err))
	}
	return nil
}

func (h *harness) append(ctx context.Context, say func(string, ...any), kind string, p kvPayload, opName, writer string, version int) error {
	var opID string
	if opName != "" {
		op, err := h.op(opName, strings.TrimPrefix(kind, "kv."), p.Key, "")
		if err != nil {
			return err
		}
		opID = op.ID.String()
	}
	data, err := encodeRecord(kind, opID, writer, p, version)
	if err != nil {
		return err
	}
	return h.publish(ctx, say, p.Key, data, opID, writer)
}

// appendGate puts an eviction of target on the log by hand at format
// version, as a build writing that format would.
func (h *harness) appendGate(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	var target string
	version := 1
	td.ScanArgs(t, "target", &target)
	td.MaybeScanArgs(t, "version", &version)
	data, err := record.Encode(&record.Record{Kind: statelog.KindEvict, Version: version, Writer: "n9", Generation: 1,
		Subject: statelog.NodeGateSubject(kvName), Scope: []string{"node:" + target}, Payload: []byte(fmt.Sprintf(`{"node":%q}`, target))})
	if err != nil {
		return err
	}
	ack, err := h.stream.Log("n9").Publish(context.Background(), statelog.NodeGateSubject(kvName), data, "", nil)
	if err != nil {
		return err
	}
	say("appended at %d", ack.Seq)
	return nil
}

// appendMark puts a creation mark of writer's on the log by hand, as the
// build that makes marks writes it (statelog's zeromark.go): a barrier
// record at version 1 on the mark's subject, named by the stream's
// creation instant.
func (h *harness) appendMark(t *testing.T, td *datadriven.TestData, say func(string, ...any)) error {
	writer := "n9"
	td.MaybeScanArgs(t, "writer", &writer)
	info, err := h.stream.Log(writer).Info(context.Background())
	if err != nil {
		return err
	}
	subject := statelog.MarkSubject(kvName, info.Created, writer, 1)
	data, err := record.Encode(&record.Record{Kind: record.KindBarrier, Version: 1, Writer: writer, Generation: 1, Subject: subject})
	if err != nil {
		return err
	}
	ack, err := h.stream.Log(writer).Publish(context.Background(), subject, data, "", nil)
	if err != nil {
		return err
	}
	say("appended at %d", ack.Seq)
	return nil
}

// publish puts data on key's subject as writer, by hand.
func (h *harness) publish(ctx context.Context, say func(string, ...any), key string, data []byte, opID, writer string) error {
	ack, err := h.stream.Log(writer).Publish(ctx, kvSubject(key), data, opID, nil)
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

// lagOf prints a read's lag: records behind, "none" where it carries none.
func lagOf(l *engine.Lag) string {
	if l == nil {
		return "none"
	}
	return fmt.Sprintf("%d", l.Seq)
}
