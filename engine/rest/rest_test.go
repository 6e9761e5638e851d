package rest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/tracker"
)

// rig is a real node (embedded broker, SQLite file) behind the read path
// on a loopback HTTP server.
type rig struct {
	t   *testing.T
	n   *node.Node
	srv *httptest.Server
}

func newRig(t *testing.T, cfg node.Config) *rig {
	t.Helper()
	if cfg.ReadBudget == 0 {
		cfg.ReadBudget = 300 * time.Millisecond
	}
	n := enginetest.OpenNode(t, cfg)
	srv := httptest.NewServer(rest.Handler(rest.Config{Routes: rest.RoutesOf(n.Tracker()), Logger: enginetest.Logger()}))
	t.Cleanup(srv.Close)
	return &rig{t: t, n: n, srv: srv}
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r *rig) get(path string, q ...string) answer {
	r.t.Helper()
	u := r.srv.URL + path
	if len(q) > 0 {
		u += "?" + strings.Join(q, "&")
	}
	resp, err := http.Get(u)
	if err != nil {
		r.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	a := answer{status: resp.StatusCode, header: resp.Header, raw: string(raw)}
	if err := json.Unmarshal(raw, &a.body); err != nil {
		r.t.Fatalf("GET %s: body is not a JSON object: %q", u, raw)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
		r.t.Fatalf("GET %s: content type %q", u, ct)
	}
	return a
}

// served asserts a 200 at level.
func (a answer) served(t *testing.T, level engine.ReadLevel) answer {
	t.Helper()
	if a.status != http.StatusOK || a.body["level"] != string(level) {
		t.Fatalf("want served at %s, got %d %s", level, a.status, a.raw)
	}
	if _, ok := a.body["complete"]; !ok {
		t.Fatalf("answer carries no complete: %s", a.raw)
	}
	return a
}

// refused asserts the code, its table status, a sentence, no rows and no
// level (nothing was served at a weaker level), and a hint exactly where
// the code is worth coming back for.
func (a answer) refused(t *testing.T, code engine.Code) answer {
	t.Helper()
	if a.body["refused"] != string(code) || a.status != engine.HTTPStatus(code) {
		t.Fatalf("want %s (%d), got %d %s", code, engine.HTTPStatus(code), a.status, a.raw)
	}
	if msg, _ := a.body["message"].(string); len(msg) < 20 {
		t.Fatalf("no sentence: %s", a.raw)
	}
	for _, k := range []string{"level", "items", "item", "projects", "seen_through"} {
		if _, ok := a.body[k]; ok {
			t.Fatalf("refusal carries %q: %s", k, a.raw)
		}
	}
	hint, has := a.body["retry_after_seconds"].(float64)
	if engine.Codes[code].Retryable != (has && hint > 0) {
		t.Fatalf("%s hint %v: %s", code, a.body["retry_after_seconds"], a.raw)
	}
	if has && a.header.Get("Retry-After") == "" {
		t.Fatalf("no Retry-After header: %s", a.raw)
	}
	return a
}

func (a answer) key(t *testing.T, key string) answer {
	t.Helper()
	if a.body["key"] != key {
		t.Fatalf("refusal names key %v, want %s: %s", a.body["key"], key, a.raw)
	}
	return a
}

func (a answer) hint() float64 { h, _ := a.body["retry_after_seconds"].(float64); return h }

func seen(t *testing.T, a answer) uint64 {
	t.Helper()
	st, ok := a.body["seen_through"].(map[string]any)
	if !ok || st["stream"] != engine.StreamTracker || st["generation"] != 1.0 {
		t.Fatalf("seen_through: %s", a.raw)
	}
	return uint64(st["seq"].(float64))
}

func seed(t *testing.T, n *node.Node) (tracker.ItemWrite, tracker.ItemWrite) {
	t.Helper()
	ctx := context.Background()
	svc := n.Tracker()
	pw, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	enginetest.Landed(t, n, engine.DomainTracker, pw.WriteResult, err)
	create := func(in tracker.NewWorkItem) tracker.ItemWrite {
		w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, in)
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
		if w.Outcome == engine.Pending {
			// Its key is taken at apply time: once applied, the same
			// operation again answers the item, from the ledger.
			w, err = svc.CreateWorkItem(ctx, engine.WriteOptions{OpID: w.OpID}, in)
			if err != nil || w.Outcome != engine.Applied || w.Item == nil {
				t.Fatalf("create brought back: %+v %v", w, err)
			}
		}
		return w
	}
	one := create(tracker.NewWorkItem{Project: "ENG", Title: "first"})
	two := create(tracker.NewWorkItem{Project: "ENG", Title: "second", Status: tracker.StatusDone})
	return one, two
}

func lastSeq(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	return enginetest.LastWrite(t, n, engine.DomainTracker)
}

func q(k, v string) string { return k + "=" + url.QueryEscape(v) }

// TestReadGrammar: every rule of the REST read grammar, over HTTP, on a
// real node.
func TestReadGrammar(t *testing.T) {
	r := newRig(t, node.Config{})
	one, _ := seed(t, r.n)
	t.Run("defaults", func(t *testing.T) { grammarDefaults(t, r, one) })
	t.Run("levels", func(t *testing.T) { grammarLevels(t, r) })
	t.Run("session", func(t *testing.T) { grammarSession(t, r, one) })
	t.Run("lag bounds", func(t *testing.T) { grammarLagBounds(t, r, one) })
	t.Run("min_position", func(t *testing.T) { grammarMinPosition(t, r, one) })
	t.Run("strict parsing", func(t *testing.T) { grammarStrictParsing(t, r) })
	t.Run("route keys", func(t *testing.T) { grammarRouteKeys(t, r) })
	t.Run("read only", func(t *testing.T) { grammarReadOnly(t, r) })
}

// grammarDefaults: stale by default, lag reported; the same JSON as
// get_work_item.
func grammarDefaults(t *testing.T, r *rig, one tracker.ItemWrite) {
	a := r.get("/api/v1/work-items/ENG-1").served(t, engine.Stale)
	if it := a.body["item"].(map[string]any); it["key"] != "ENG-1" || it["title"] != "first" || it["version"] == nil {
		t.Fatalf("item: %s", a.raw)
	}
	if lag, ok := a.body["lag"].(map[string]any); !ok || lag["seq"] != 0.0 {
		t.Fatalf("lag: %s", a.raw)
	}
	var viaService tracker.ItemRead
	if err := json.Unmarshal([]byte(a.raw), &viaService); err != nil || viaService.Item.ID != one.Item.ID {
		t.Fatalf("answer does not decode as the tool's answer: %v", err)
	}
	r.get("/api/v1/projects").served(t, engine.Stale)
	r.get("/api/v1/work-items", q("project", "ENG")).served(t, engine.Stale)
}

// grammarLevels: each level is served as asked, and says so, with its lag
// (consistent_prefix claims no age, yet reports how far behind its prefix
// is); a linearizable read establishes the log's end: at one replica by
// asking the log's one server (statelog.EndReader), appending nothing.
func grammarLevels(t *testing.T, r *rig) {
	for _, l := range []engine.ReadLevel{engine.Linearizable, engine.Stale, engine.ConsistentPrefix} {
		a := r.get("/api/v1/work-items", q("project", "ENG"), q("read_level", string(l))).served(t, l)
		if _, hasLag := a.body["lag"]; !hasLag {
			t.Fatalf("%s: no lag on the answer: %s", l, a.raw)
		}
	}
	before := r.n.Replica(engine.DomainTracker).Stats()
	r.get("/api/v1/projects", q("read_level", "linearizable")).served(t, engine.Linearizable)
	if now := r.n.Replica(engine.DomainTracker).Stats(); now.EndReads == before.EndReads || now.BarrierAppends != before.BarrierAppends {
		t.Fatalf("a linearizable read at one replica: %d end reads, %d barrier appends", now.EndReads-before.EndReads, now.BarrierAppends-before.BarrierAppends)
	}
}

// grammarSession: session only beside min_position, refused otherwise
// naming the key and the two honest asks.
func grammarSession(t *testing.T, r *rig, one tracker.ItemWrite) {
	a := r.get("/api/v1/projects", q("read_level", "session")).refused(t, engine.CodeInvalidArgument).key(t, "min_position")
	if msg := a.body["message"].(string); !strings.Contains(msg, "linearizable") || !strings.Contains(msg, "stale with max_lag_seq") {
		t.Fatalf("session refusal names no alternatives: %s", msg)
	}
	a = r.get("/api/v1/work-items/ENG-1", q("read_level", "session"), q("min_position", one.Position)).served(t, engine.Session)
	if want, _ := engine.ParsePosition(one.Position); seen(t, a) < want.Seq {
		t.Fatalf("session served from before min_position: %s", a.raw)
	}
}

// grammarLagBounds: max_lag_* refused at every level but stale; a zero
// bound is no bound.
func grammarLagBounds(t *testing.T, r *rig, one tracker.ItemWrite) {
	r.get("/api/v1/projects", q("read_level", "linearizable"), q("max_lag_seq", "250")).refused(t, engine.CodeInvalidArgument).key(t, "max_lag_seq")
	r.get("/api/v1/projects", q("read_level", "consistent_prefix"), q("max_lag_seconds", "2")).refused(t, engine.CodeInvalidArgument).key(t, "max_lag_seconds")
	r.get("/api/v1/projects", q("read_level", "session"), q("min_position", one.Position), q("max_lag_seq", "3")).refused(t, engine.CodeInvalidArgument).key(t, "max_lag_seq")
	r.get("/api/v1/projects", q("max_lag_seq", "250"), q("max_lag_seconds", "1.5")).served(t, engine.Stale)
	r.get("/api/v1/projects", q("read_level", "linearizable"), q("max_lag_seq", "0")).served(t, engine.Linearizable)
	r.get("/api/v1/projects", q("read_level", "consistent_prefix"), q("max_lag_seconds", "0")).served(t, engine.ConsistentPrefix)
}

// grammarMinPosition: min_position is honoured at every level; another
// domain's log is wrong_stream at every level.
func grammarMinPosition(t *testing.T, r *rig, one tracker.ItemWrite) {
	for _, l := range []string{"linearizable", "session", "stale", "consistent_prefix"} {
		r.get("/api/v1/work-items/ENG-1", q("read_level", l), q("min_position", one.Position)).served(t, engine.ReadLevel(l))
		r.get("/api/v1/work-items/ENG-1", q("read_level", l), q("min_position", engine.StreamPages+"@1:1")).refused(t, engine.CodeWrongStream)
	}
	r.get("/api/v1/projects", q("min_position", engine.StreamTracker+"@7:1")).refused(t, engine.CodeWrongStream)

	// A position not reached within the read budget is behind, with a
	// hint, at stale and consistent_prefix alike.
	far := engine.StreamTracker + "@1:100000"
	for _, l := range []string{"stale", "consistent_prefix", "session"} {
		a := r.get("/api/v1/projects", q("read_level", l), q("min_position", far)).refused(t, engine.CodeBehind)
		if p, _ := a.body["position"].(map[string]any); p["seq"] != 100000.0 {
			t.Fatalf("behind names no position: %s", a.raw)
		}
	}
}

// grammarStrictParsing: strict parsing; a malformed value or key is
// refused, naming the key.
func grammarStrictParsing(t *testing.T, r *rig) {
	for _, bad := range []string{"CREWLET_TRACKER_LOG@1:01", "CREWLET_TRACKER_LOG@0:1", "crewlet_tracker_log@1:1", "CREWLET_TRACKER_LOG:1",
		" CREWLET_TRACKER_LOG@1:1", "CREWLET_TRACKER_LOG@1:-1", "CREWLET_TRACKER_LOG@1:1x", "@1:1", "CREWLET_TRACKER_LOG@1:"} {
		r.get("/api/v1/projects", q("min_position", bad)).refused(t, engine.CodeInvalidArgument).key(t, "min_position")
	}
	for _, bad := range []string{"-1", "1.5", "abc", "01", "+3", "99999999999999999999"} {
		r.get("/api/v1/projects", q("max_lag_seq", bad)).refused(t, engine.CodeInvalidArgument).key(t, "max_lag_seq")
	}
	for _, bad := range []string{"-1", "NaN", "Inf", "1e3", ".5", "1.", "01"} {
		r.get("/api/v1/projects", q("max_lag_seconds", bad)).refused(t, engine.CodeInvalidArgument).key(t, "max_lag_seconds")
	}
	r.get("/api/v1/projects", q("read_level", "fresh")).refused(t, engine.CodeInvalidArgument).key(t, "read_level")
	r.get("/api/v1/projects", q("read_level", "LINEARIZABLE")).refused(t, engine.CodeInvalidArgument)
	r.get("/api/v1/projects", q("level", "stale")).refused(t, engine.CodeInvalidArgument).key(t, "level")
	r.get("/api/v1/projects", "read_level=stale", "read_level=linearizable").refused(t, engine.CodeInvalidArgument).key(t, "read_level")
	r.get("/api/v1/projects", "read_level=").refused(t, engine.CodeInvalidArgument).key(t, "read_level")
	r.get("/api/v1/projects", "%zz").refused(t, engine.CodeInvalidArgument)
}

// grammarRouteKeys: the list route's own keys, paging and filters, and
// the routes' refusals.
func grammarRouteKeys(t *testing.T, r *rig) {
	a := r.get("/api/v1/work-items", q("project", "ENG"), q("limit", "1")).served(t, engine.Stale)
	cur, _ := a.body["next_cursor"].(string)
	if items := a.body["items"].([]any); len(items) != 1 || cur == "" {
		t.Fatalf("page one: %s", a.raw)
	}
	a = r.get("/api/v1/work-items", q("project", "ENG"), q("limit", "1"), q("cursor", cur)).served(t, engine.Stale)
	if items := a.body["items"].([]any); len(items) != 1 || items[0].(map[string]any)["key"] != "ENG-2" {
		t.Fatalf("page two: %s", a.raw)
	}
	a = r.get("/api/v1/work-items", q("project", "ENG"), q("status", "done")).served(t, engine.Stale)
	if items := a.body["items"].([]any); len(items) != 1 {
		t.Fatalf("status filter: %s", a.raw)
	}
	r.get("/api/v1/work-items", q("project", "ENG"), q("assignee", "nobody")).served(t, engine.Stale)
	r.get("/api/v1/work-items", q("limit", "0")).refused(t, engine.CodeInvalidArgument).key(t, "limit")
	r.get("/api/v1/work-items", q("limit", "201")).refused(t, engine.CodeInvalidArgument).key(t, "limit")
	r.get("/api/v1/work-items", q("status", "finished")).refused(t, engine.CodeInvalidArgument)
	r.get("/api/v1/work-items", q("project", "eng")).refused(t, engine.CodeInvalidArgument)
	r.get("/api/v1/work-items", q("cursor", "nonsense")).refused(t, engine.CodeInvalidArgument)
	r.get("/api/v1/projects", q("project", "ENG")).refused(t, engine.CodeInvalidArgument).key(t, "project")
	r.get("/api/v1/work-items/ENG-99").refused(t, engine.CodeNotFound)
	r.get("/api/v1/work-items/eng-1").refused(t, engine.CodeInvalidArgument)
	r.get("/api/v1/nothing-here").refused(t, engine.CodeNotFound)
}

// grammarReadOnly: the read routes answer no POST.
func grammarReadOnly(t *testing.T, r *rig) {
	resp, err := http.Post(r.srv.URL+"/api/v1/projects", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST answered %d", resp.StatusCode)
	}
}

// TestReplicationAnswer: with the broker up, a replication answer is
// stale, with the lag measured against the log's end just asked.
func TestReplicationAnswer(t *testing.T) {
	r := newRig(t, node.Config{})
	seed(t, r.n)
	st := r.n.Replica(engine.DomainTracker).Replication(context.Background())
	if st.Level != engine.Stale || st.Lag == nil || st.Lag.Seq != 0 || st.LogEnd == nil || st.LogEnd.Seq != lastSeq(t, r.n) || !st.Complete {
		t.Fatalf("replication answer: %+v", st)
	}
}

// TestLogFull: a byte ceiling small enough to fill. Ordinary writes are
// refused log_full a sixteenth short of the broker's ceiling, before
// anything is published; linearizable reads that append a barrier (as on
// a replicated log) refuse log_full (no barrier can be written), those
// that ask a one-replica log where it ends are answered, appending
// nothing; stale still answers. The sixteenth is left for gate records:
// the broker still takes one.
func TestLogFull(t *testing.T) {
	const ceiling = 16 << 10
	r := newRig(t, node.Config{BarrierReads: true, Stream: node.StreamConfig{LogMaxBytes: map[string]int64{tracker.Spec.CeilingKey: ceiling}}})
	seed(t, r.n)
	ctx := context.Background()
	var refused error
	for i := 0; i < 200 && refused == nil; i++ {
		_, refused = r.n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("filler %d %s", i, strings.Repeat("x", 200))})
	}
	if engine.CodeOf(refused) != engine.CodeLogFull {
		t.Fatalf("filling the log ended with %v", refused)
	}
	info, err := r.n.Log(engine.DomainTracker).Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if limit := tracker.Spec.Ordinary(ceiling); info.Bytes > uint64(limit) {
		t.Fatalf("ordinary appends took the log to %d bytes, past the ordinary ceiling %d", info.Bytes, limit)
	}
	// Refused before publishing: the log does not move.
	_, err = r.n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "one more " + strings.Repeat("x", 200)})
	if engine.CodeOf(err) != engine.CodeLogFull {
		t.Fatalf("write on a full log: %v", err)
	}
	if after := lastSeq(t, r.n); after != info.LastSeq {
		t.Fatalf("a refused write published: %d -> %d", info.LastSeq, after)
	}
	// Barriers are ordinary appends too: the space a write no longer fits
	// in takes a few more of them, then none.
	var a answer
	for i := 0; i < 100; i++ {
		if a = r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")); a.status != http.StatusOK {
			break
		}
	}
	a.refused(t, engine.CodeLogFull)
	info, _ = r.n.Log(engine.DomainTracker).Info(ctx)
	if limit := tracker.Spec.Ordinary(ceiling); info.Bytes > uint64(limit) {
		t.Fatalf("barriers took the log to %d bytes, past the ordinary ceiling %d", info.Bytes, limit)
	}
	before := r.n.Replica(engine.DomainTracker).Stats().BarrierAppends
	a = r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")).refused(t, engine.CodeLogFull)
	if !strings.Contains(a.body["message"].(string), "set-capacity") {
		t.Fatalf("log_full says nothing to do: %s", a.raw)
	}
	if now, _ := r.n.Log(engine.DomainTracker).Info(ctx); r.n.Replica(engine.DomainTracker).Stats().BarrierAppends != before || now.LastSeq != info.LastSeq {
		t.Fatal("a barrier was appended on a full log")
	}
	r.get("/api/v1/work-items/ENG-1").served(t, engine.Stale)
	r.get("/api/v1/work-items", q("read_level", "consistent_prefix")).served(t, engine.ConsistentPrefix)
	r.n.Log(engine.DomainTracker).SetBarrierReads(false)
	r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")).served(t, engine.Linearizable)
	if now, _ := r.n.Log(engine.DomainTracker).Info(ctx); now.LastSeq != info.LastSeq {
		t.Fatal("a read that asks the log's end appended to it")
	}
	// The reserve is real: an eviction, a gate record, is still written to
	// the full log and applied.
	ev, err := r.n.NodeGates().EvictNode(ctx, engine.WriteOptions{}, "n2")
	if err != nil || ev.Outcome != engine.Applied || len(ev.Steps) != 2 || ev.Steps[0].Domain != string(engine.DomainTracker) {
		t.Fatalf("an eviction on a full log: %+v %v", ev, err)
	}
}

// TestCapacityWindows: a node in maintenance or seal publishes nothing:
// linearizable reads and writes refuse maintenance, every other level is
// answered.
func TestCapacityWindows(t *testing.T) {
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{DataDir: dir})
	one, _ := seed(t, n)
	n.Close()
	for _, mode := range []string{node.ModeMaintenance, node.ModeSeal} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, node.Config{DataDir: dir, Mode: mode})
			end := lastSeq(t, r.n)
			r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")).refused(t, engine.CodeMaintenance)
			r.get("/api/v1/projects", q("read_level", "linearizable")).refused(t, engine.CodeMaintenance)
			r.get("/api/v1/work-items/ENG-1").served(t, engine.Stale)
			r.get("/api/v1/work-items", q("read_level", "consistent_prefix")).served(t, engine.ConsistentPrefix)
			r.get("/api/v1/work-items/ENG-1", q("read_level", "session"), q("min_position", one.Position)).served(t, engine.Session)
			_, err := r.n.Tracker().CreateWorkItem(context.Background(), engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "in a window"})
			if engine.CodeOf(err) != engine.CodeMaintenance {
				t.Fatalf("write in %s: %v", mode, err)
			}
			if after := lastSeq(t, r.n); after != end {
				t.Fatalf("%s published: %d -> %d", mode, end, after)
			}
			r.n.Close()
		})
	}
}

// TestIncompleteAndDeferred: a record this build cannot decode (format
// version 2, published straight onto the stream) is retained: set answers
// say complete false with the block, a get of an object its scope meets
// refuses deferred, others answer; a record whose scope cannot be read
// refuses every read deferred_scope_unknown.
func TestIncompleteAndDeferred(t *testing.T) {
	r := newRig(t, node.Config{})
	one, _ := seed(t, r.n)
	ctx := context.Background()
	js := r.n.Broker().JS
	publish := func(subject string, body map[string]any) uint64 {
		t.Helper()
		data, _ := json.Marshal(body)
		ack, err := js.Publish(ctx, subject, data)
		if err != nil {
			t.Fatal(err)
		}
		if err := r.n.Replica(engine.DomainTracker).WaitApplied(ctx, ack.Sequence); err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	itemScope := "item:" + one.Item.ID
	subject := "crewlet.tracker.item." + one.Item.ID
	first := publish(subject, map[string]any{"kind": "tracker.update_work_item", "v": record.FormatVersion + 1, "writer": "n9", "gen": 1, "subject": subject,
		"scope": []string{itemScope}, "payload": map[string]any{"id": one.Item.ID, "priority": "high"}})

	a := r.get("/api/v1/work-items", q("project", "ENG")).served(t, engine.Stale)
	if a.body["complete"] != false {
		t.Fatalf("complete: %s", a.raw)
	}
	inc := a.body["incomplete"].(map[string]any)
	from := inc["from"].(map[string]any)
	if inc["records"] != 1.0 || from["seq"] != float64(first) || from["stream"] != engine.StreamTracker || inc["direction"] != "unknown" ||
		fmt.Sprint(inc["scope"]) != fmt.Sprint([]any{itemScope}) {
		t.Fatalf("incomplete block: %s", a.raw)
	}
	if len(a.body["items"].([]any)) != 2 {
		t.Fatalf("rows: %s", a.raw)
	}
	r.get("/api/v1/projects", q("read_level", "linearizable")).served(t, engine.Linearizable)
	a = r.get("/api/v1/work-items/ENG-1").refused(t, engine.CodeDeferred)
	if !strings.Contains(a.body["message"].(string), itemScope) || a.body["position"].(map[string]any)["seq"] != float64(first) {
		t.Fatalf("deferred: %s", a.raw)
	}
	r.get("/api/v1/work-items/ENG-1", q("read_level", "linearizable")).refused(t, engine.CodeDeferred)
	if a := r.get("/api/v1/work-items/ENG-2").served(t, engine.Stale); a.body["complete"] != true {
		t.Fatalf("an object the record does not cover: %s", a.raw)
	}
	r.get("/api/v1/work-items/ENG-3").refused(t, engine.CodeNotFound)

	// A create this build cannot read covers its project's numbering.
	psub := "crewlet.tracker.project.ENG"
	publish(psub, map[string]any{"kind": "tracker.create_work_item", "v": record.FormatVersion + 1, "writer": "n9", "gen": 1, "subject": psub,
		"scope": []string{"project:ENG", "item:wi_new"}, "payload": map[string]any{}})
	r.get("/api/v1/work-items/ENG-3").refused(t, engine.CodeDeferred)
	a = r.get("/api/v1/work-items").served(t, engine.Stale)
	if inc := a.body["incomplete"].(map[string]any); inc["records"] != 2.0 || inc["from"].(map[string]any)["seq"] != float64(first) {
		t.Fatalf("two retained: %s", a.raw)
	}

	// A record whose scope cannot be read blocks the whole domain.
	publish(subject, map[string]any{"kind": "tracker.something_new", "v": record.FormatVersion + 1, "writer": "n9", "gen": 1, "subject": subject})
	for _, path := range []string{"/api/v1/work-items", "/api/v1/work-items/ENG-2", "/api/v1/projects"} {
		r.get(path).refused(t, engine.CodeDeferredScopeUnknown)
	}
}

func ptr[T any](v T) *T { return &v }
