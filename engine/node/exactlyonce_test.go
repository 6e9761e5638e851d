package node_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
	"github.com/crewlet/crewlet/ledger"
)

func digestOf(tool string, kv ...any) string {
	m := map[string]any{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return ledger.Digest(tool, m)
}

func wantCode(t *testing.T, err error, code engine.Code) *engine.Refusal {
	t.Helper()
	ref, ok := engine.AsRefusal(err)
	if !ok || ref.Code != code {
		t.Fatalf("want %s, got %v", code, err)
	}
	return ref
}

// TestOpIDComesBackOnlyWithItsCall: an op id brought back with other
// arguments, or with a write to another object, is refused op_reused
// before anything is written, whether the ledger holds it or it never
// landed; a client-minted key reused after a lost answer files one item.
func TestOpIDComesBackOnlyWithItsCall(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	dA := digestOf("create_work_item", "project", "ENG", "title", "a")
	first, err := svc.CreateWorkItem(ctx, engine.WriteOptions{Digest: dA}, tracker.NewWorkItem{Project: "ENG", Title: "a"})
	if err != nil || first.Outcome != engine.Applied {
		t.Fatal(first, err)
	}
	before := lastSeq(t, n)
	// Same id, other arguments: the ledger holds it.
	_, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: first.OpID, Digest: digestOf("create_work_item", "project", "ENG", "title", "b")}, tracker.NewWorkItem{Project: "ENG", Title: "b"})
	ref := wantCode(t, err, engine.CodeOpReused)
	if ref.Position == nil || ref.Position.Token() != first.Position {
		t.Fatalf("op_reused names %v, want where it landed (%s)", ref.Position, first.Position)
	}
	// Same id with a write to another object.
	svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "second"})
	before = lastSeq(t, n)
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: first.OpID}, "ENG-2", 0, tracker.ItemPatch{Title: ptr("x")})
	wantCode(t, err, engine.CodeOpReused)
	// An id minted for one call, never landed, brought back with another.
	never, _ := ledger.MintFor(time.Now(), "update", "ENG-1", digestOf("update_work_item", "key", "ENG-1", "title", "p"))
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: never.String(), Digest: digestOf("update_work_item", "key", "ENG-1", "title", "q")}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("q")})
	wantCode(t, err, engine.CodeOpReused)
	if after := lastSeq(t, n); after != before {
		t.Fatalf("refused calls published: %d -> %d", before, after)
	}

	// A client-minted key: the first answer is lost, the retry under the
	// same key files one item.
	key := must(uuid.NewV7()).String()
	dK := digestOf("create_work_item", "project", "ENG", "title", "client")
	a, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: key, Digest: dK}, tracker.NewWorkItem{Project: "ENG", Title: "client"})
	if err != nil || a.Outcome != engine.Applied || !namesKey(a.OpID, key, "create_work_item-ENG") {
		t.Fatal(a, err)
	}
	seq := lastSeq(t, n)
	b, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: key, Digest: dK}, tracker.NewWorkItem{Project: "ENG", Title: "client"})
	if err != nil || b.Item.Key != a.Item.Key || b.Position != a.Position || lastSeq(t, n) != seq {
		t.Fatalf("client key retry: %+v %v", b, err)
	}
	// The same key sent with a write to another object.
	_, err = svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: key}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("z")})
	wantCode(t, err, engine.CodeOpReused)
	// The op_id the answer gave names the same operation as the key.
	c, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: a.OpID, Digest: dK}, tracker.NewWorkItem{Project: "ENG", Title: "client"})
	if err != nil || c.Item.Key != a.Item.Key || c.Position != a.Position || lastSeq(t, n) != seq {
		t.Fatalf("client key retried under its answer's op_id: %+v %v", c, err)
	}
	// A key minted an hour ago is not one minted before its first attempt,
	// and no write under it landed.
	old, _ := ledger.NewV7At(time.Now().Add(-time.Hour))
	_, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: old.String()}, tracker.NewWorkItem{Project: "ENG", Title: "old"})
	wantCode(t, err, engine.CodeInvalidArgument)
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 3 {
		t.Fatalf("%d items, want 3", c)
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestSecondCopyAppliesNothing: a second copy of a create on the log (an
// append past the duplicate window that no arbitration stopped) files no
// second item and applies nothing; the op stays answered by its first copy.
func TestSecondCopyAppliesNothing(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	first, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "once"})
	if err != nil {
		t.Fatal(err)
	}
	payload, _ := json.Marshal(map[string]any{"id": first.Item.ID, "project": "ENG", "number": 2, "title": "twice", "status": "open"})
	data, _ := record.Encode(&record.Record{Kind: trackrec.KindCreateWorkItem, Version: 1, OpID: first.OpID, Writer: "n1", Generation: 1,
		Subject: "crewlet.tracker.project.ENG", Payload: payload})
	ack, err := n.Log(engine.DomainTracker).Publish(ctx, "crewlet.tracker.project.ENG", data, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, ack.Seq); err != nil {
		t.Fatal(err)
	}
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != 1 {
		t.Fatalf("%d items", c)
	}
	got, _ := svc.GetWorkItem(ctx, lin(), "ENG-1")
	if got.Item.Title != "once" {
		t.Fatalf("second copy applied: %+v", got.Item)
	}
	next, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "next"})
	if err != nil || next.Item.Key != "ENG-2" {
		t.Fatalf("next: %+v %v", next, err)
	}
}

// TestLedgerSweepAndWatermark: 40 simulated days; rows older than 30 days
// are swept and the watermark moves; an op minted before it whose row is
// gone is answered unknown before anything is published (logged
// statelog_write_unvouched), except a create, answered from its row.
func TestLedgerSweepAndWatermark(t *testing.T) {
	ctx := context.Background()
	clock := enginetest.NewClock(time.Now())
	rec := enginetest.NewRecorder()
	n := enginetest.OpenNode(t, node.Config{Clock: clock, Logger: rec.Logger()})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	created, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "old"})
	if err != nil {
		t.Fatal(err)
	}
	upd, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", created.Item.Version, tracker.ItemPatch{Title: ptr("older")})
	if err != nil || upd.Outcome != engine.Applied {
		t.Fatal(upd, err)
	}
	clock.Advance(40 * 24 * time.Hour)
	deleted, err := n.SweepLedger(ctx)
	if err != nil || deleted != 3 {
		t.Fatalf("sweep deleted %d, %v", deleted, err)
	}
	wm, lost, err := ledger.Watermark(ctx, n.DB())
	if err != nil || !lost || !wm.Equal(time.UnixMilli(clock.Now().Add(-ledger.Retention).UnixMilli())) {
		t.Fatalf("watermark %v %v %v", wm, lost, err)
	}
	before := lastSeq(t, n)
	again, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{OpID: upd.OpID}, "ENG-1", created.Item.Version, tracker.ItemPatch{Title: ptr("older")})
	if err != nil || again.Outcome != engine.Unknown || again.Position != "" {
		t.Fatalf("unvouched update: %+v %v", again, err)
	}
	lines := rec.Lines(engine.EvWriteUnvouched)
	if len(lines) != 1 || lines[0].Attrs[engine.LogOpID] != upd.OpID || lines[0].Attrs["minted_at"] == "" || lines[0].Attrs["refusal"] != "stale" {
		t.Fatalf("unvouched lines: %+v", lines)
	}
	c, err := svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: created.OpID}, tracker.NewWorkItem{Project: "ENG", Title: "old"})
	if err != nil || c.Outcome != engine.Applied || c.Item.Key != "ENG-1" || c.Position != created.Position {
		t.Fatalf("unvouched create: %+v %v", c, err)
	}
	if after := lastSeq(t, n); after != before {
		t.Fatalf("unvouched ops published: %d -> %d", before, after)
	}
	// An op minted now is vouched for and lands as usual.
	fresh, err := svc.UpdateWorkItem(ctx, engine.WriteOptions{}, "ENG-1", 0, tracker.ItemPatch{Title: ptr("new")})
	if err != nil || fresh.Outcome != engine.Applied {
		t.Fatalf("fresh: %+v %v", fresh, err)
	}
}

// namesKey reports whether the op id an answer gave names the operation a
// client minted as key, under this name.
func namesKey(answered, key, name string) bool {
	id, err := ledger.Parse(answered)
	return err == nil && ledger.IsClientForm(id.UUID) && ledger.KeyOf(id.UUID).String() == key && id.Verb+"-"+id.Object == name
}

// TestSecondCopiesDrained: second copies of operations drained at boot
// behind their first copies — of an op applied before the node went down,
// and of ops whose first copies are drained with them, appended past the
// duplicate window — apply nothing, while every first copy files one
// item, numbered in log order, with its ledger row at the first copy. A
// drain this long is mostly applied in batches that ask the ledger about
// their operations at once (batchLedger), and one that ignored the
// ledger's answer fails here on the insert's constraint; which batches
// formed is not checked, and a create's second copy is moot anyway (its
// item is filed), so the statelog script batch_ledger.txt, whose kv adds
// show a double apply, pins one batch's composition.
func TestSecondCopiesDrained(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	svc := n.Tracker()
	mustProject(t, svc, "ENG")
	earlier, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "earlier"})
	if err != nil || earlier.Outcome != engine.Applied {
		t.Fatal(earlier, err)
	}
	firstSeq := map[string]uint64{earlier.OpID: ledgerSeq(t, n, earlier.OpID)}
	n.Close()

	const firsts = 200
	log := openDownLog(t, dir)
	var ops []string
	for i := 0; i < firsts; i++ {
		op := must(ledger.MintFor(time.Now(), "create_work_item", "ENG", "")).String()
		ops = append(ops, op)
		firstSeq[op] = log.putCreate(op, fmt.Sprintf("wi_batch_%d", i), fmt.Sprintf("first %d", i))
	}
	// A second copy of the op filed before the node went down, and of
	// two of the drained ones, the first and the last.
	log.pastWindow(func() {
		log.putCreate(earlier.OpID, earlier.Item.ID, "earlier again")
		log.putCreate(ops[0], "wi_batch_0", "first 0 again")
	})
	var last uint64
	log.pastWindow(func() { last = log.putCreate(ops[firsts-1], fmt.Sprintf("wi_batch_%d", firsts-1), "last again") })
	log.close()

	n = enginetest.OpenNode(t, node.Config{DataDir: dir})
	waitAppliedOrFailed(t, n.Replica(engine.DomainTracker), last)
	if c := count(t, n, `SELECT count(*) FROM tracker_items`); c != firsts+1 {
		t.Fatalf("%d items, want %d: a second copy filed one", c, firsts+1)
	}
	if c := count(t, n, `SELECT count(*) FROM tracker_items WHERE title LIKE '%again'`); c != 0 {
		t.Fatalf("%d items took a second copy's title", c)
	}
	for op, seq := range firstSeq {
		if got := ledgerSeq(t, n, op); got != seq {
			t.Fatalf("op %s: ledger row at %d, want its first copy at %d", op, got, seq)
		}
	}
	for i := range ops {
		got, err := n.Tracker().GetWorkItem(ctx, lin(), fmt.Sprintf("ENG-%d", i+2))
		if err != nil || got.Item.Title != fmt.Sprintf("first %d", i) {
			t.Fatalf("ENG-%d: %+v %v", i+2, got.Item, err)
		}
	}
}

func ledgerSeq(t *testing.T, n *node.Node, op string) uint64 {
	t.Helper()
	var seq uint64
	if err := n.DB().QueryRow(`SELECT seq FROM statelog_ledger WHERE op_id = ?`, op).Scan(&seq); err != nil {
		t.Fatalf("ledger row of %s: %v", op, err)
	}
	return seq
}

// waitAppliedOrFailed waits for rep to apply seq, failing the test as
// soon as the applier reports an error: an apply that errs (a ledger row
// written twice is refused by its insert) retries for ever, and would
// fail only at the suite's timeout.
func waitAppliedOrFailed(t *testing.T, rep *statelog.Replica, seq uint64) {
	t.Helper()
	for {
		wctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		err := rep.WaitApplied(wctx, seq)
		cancel()
		if err == nil {
			return
		}
		if aerr := rep.ApplyErr(); aerr != nil {
			t.Fatalf("the applier failed: %v", aerr)
		}
	}
}

// downLog appends to the tracker log of a node that is down, through a
// bare broker on its store.
type downLog struct {
	t   *testing.T
	dir string
	br  *broker.Embedded
	js  jetstream.JetStream
}

func openDownLog(t *testing.T, dir string) *downLog {
	l := &downLog{t: t, dir: dir}
	l.start()
	return l
}

func (l *downLog) start() {
	br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: filepath.Join(l.dir, "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		l.t.Fatal(err)
	}
	l.br = br
	l.js, _ = jetstream.New(br.Conn)
}

func (l *downLog) close() { l.br.Close() }

// putCreate appends a create of itemID in ENG under op, its op id also
// its message id, and returns its sequence.
func (l *downLog) putCreate(op, itemID, title string) uint64 {
	return l.put(op, trackrec.KindCreateWorkItem, itemID, map[string]any{"id": itemID, "project": "ENG", "number": 0, "title": title, "status": "open"})
}

// put appends a record of kind about itemID under op, its op id also its
// message id, and returns its sequence.
func (l *downLog) put(op, kind, itemID string, body any) uint64 {
	payload, _ := json.Marshal(body)
	data, _ := record.Encode(&record.Record{Kind: kind, Version: 1, OpID: op, Writer: "n1", Generation: 1,
		Subject: "crewlet.tracker.item." + itemID, By: "seat:drain", Payload: payload})
	ack, err := l.js.Publish(context.Background(), "crewlet.tracker.item."+itemID, data, jetstream.WithMsgID(op))
	if err != nil || ack.Duplicate {
		l.t.Fatalf("%s %s: %+v %v (a copy the broker collapsed is no second copy)", kind, itemID, ack, err)
	}
	return ack.Sequence
}

// pastWindow runs put once the broker's duplicate window has passed over
// every message before it, then puts the window back: the copies put land
// as a retry after the window would, under their op ids. The broker
// forgets an id only when a timer set with the window it was stored under
// fires, so the window is narrowed and the broker restarted, which
// reloads the ids within the new window alone.
func (l *downLog) pastWindow(put func()) {
	const narrow = 100 * time.Millisecond
	l.window(narrow)
	l.close()
	time.Sleep(2 * narrow)
	l.start()
	put()
	l.window(2 * time.Minute)
}

func (l *downLog) window(d time.Duration) {
	ctx := context.Background()
	s, err := l.js.Stream(ctx, "CREWLET_TRACKER_LOG")
	if err != nil {
		l.t.Fatal(err)
	}
	cfg := s.CachedInfo().Config
	cfg.Duplicates = d
	if _, err := l.js.UpdateStream(ctx, cfg); err != nil {
		l.t.Fatal(err)
	}
}
