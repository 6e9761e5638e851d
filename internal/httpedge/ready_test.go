package httpedge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/internal/httpedge"
)

// readyz asks ts's /readyz and returns the status and the JSON body.
func readyz(t *testing.T, ts *httptest.Server) (int, map[string]any) {
	t.Helper()
	resp, err := http.Get(ts.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("/readyz answered %d %q, not JSON", resp.StatusCode, raw)
	}
	return resp.StatusCode, body
}

func serveReady(t *testing.T, n *node.Node) *httptest.Server {
	mux := http.NewServeMux()
	mux.Handle("/readyz", httpedge.Ready(n.Unready))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts
}

// TestReadyzFollowsTheApplier: a real node answers 200 while it serves,
// 503 stalled once its applier is faulted past the retry budget (an
// injected apply failure), with the table's sentence and not the
// applier's error, naming the applier_faulted alarm, and 200 again once
// the failure clears.
func TestReadyzFollowsTheApplier(t *testing.T) {
	var failing atomic.Bool
	hooks := node.Hooks{BeforeApplyCommit: func(engine.Domain, uint64) error {
		if failing.Load() {
			return errors.New("injected: disk on fire")
		}
		return nil
	}}
	n := enginetest.OpenNode(t, node.Config{Hooks: hooks, ApplyRetryBudget: 100 * time.Millisecond, WriteWait: 100 * time.Millisecond})
	ts := serveReady(t, n)
	if code, body := readyz(t, ts); code != http.StatusOK || body["ready"] != true {
		t.Fatalf("a serving node: %d %v", code, body)
	}
	ctx := context.Background()
	pw, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	enginetest.Landed(t, n, engine.DomainTracker, pw.WriteResult, err)
	failing.Store(true)
	t.Cleanup(func() { failing.Store(false) })
	// Its record lands and the applier cannot apply it: pending, or
	// stalled once the applier has outlived its budget.
	if w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "stuck"}); err != nil && engine.CodeOf(err) != engine.CodeStalled {
		t.Fatalf("create while the applier fails: %+v %v", w, err)
	}
	enginetest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		code, body := readyz(t, ts)
		if code != http.StatusServiceUnavailable || body["refused"] != string(engine.CodeStalled) || body["ready"] != false || body["alarm"] != "applier_faulted" {
			return fmt.Errorf("readyz %d %v", code, body)
		}
		if msg, _ := body["message"].(string); msg == "" || strings.Contains(msg, "disk on fire") {
			return fmt.Errorf("readyz message %q: want the table's sentence, without the applier's error", msg)
		}
		return nil
	})
	failing.Store(false)
	enginetest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if code, body := readyz(t, ts); code != http.StatusOK {
			return fmt.Errorf("after recovery: %d %v", code, body)
		}
		return nil
	})
}

// TestReadyzEvicted: a node another data node evicts is not ready
// (evicted): its copy is out of service by the same rule the estate
// uses. The second node shares the first one's broker through its
// client port, as a fleet on one broker.
func TestReadyzEvicted(t *testing.T) {
	const token = "readyz-evicted-client-token"
	a := enginetest.OpenNode(t, node.Config{Name: "a", Stream: node.StreamConfig{Client: node.ClientConfig{Listen: "127.0.0.1:0", Token: token}}})
	b := enginetest.OpenNode(t, node.Config{Name: "b", Stream: node.StreamConfig{Type: "nats",
		URLs: []string{"nats://" + token + "@" + strings.TrimPrefix(a.ClientURL(), "nats://")}}})
	ts := serveReady(t, a)
	if code, body := readyz(t, ts); code != http.StatusOK {
		t.Fatalf("before the eviction: %d %v", code, body)
	}
	if _, err := b.NodeGates().EvictNode(context.Background(), engine.WriteOptions{}, a.Name()); err != nil {
		t.Fatal(err)
	}
	enginetest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if code, body := readyz(t, ts); code != http.StatusServiceUnavailable || body["refused"] != string(engine.CodeEvicted) {
			return fmt.Errorf("readyz %d %v", code, body)
		}
		return nil
	})
}

// TestReadyzCapacityWindow: a node in maintenance or seal mode is not
// ready (maintenance): it refuses writes and linearizable reads. Only GET
// and HEAD are answered.
func TestReadyzCapacityWindow(t *testing.T) {
	for _, mode := range []string{node.ModeMaintenance, node.ModeSeal} {
		n := enginetest.OpenNode(t, node.Config{Mode: mode})
		ts := serveReady(t, n)
		if code, body := readyz(t, ts); code != http.StatusServiceUnavailable || body["refused"] != string(engine.CodeMaintenance) {
			t.Fatalf("%s: readyz %d %v", mode, code, body)
		}
		n.Close()
	}
	n := enginetest.OpenNode(t, node.Config{})
	ts := serveReady(t, n)
	resp, err := http.Post(ts.URL+"/readyz", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST /readyz: %d", resp.StatusCode)
	}
}
