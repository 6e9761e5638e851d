//go:build integration

package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/domains"
)

// auditEntry is one entry of GET /api/v1/audit as the test reads it.
type auditEntry struct {
	Kind     string `json:"kind"`
	What     string `json:"what"`
	By       string `json:"by"`
	Writer   string `json:"writer"`
	OpID     string `json:"op_id"`
	At       string `json:"at"`
	Domain   string `json:"domain"`
	Position struct {
		Stream string `json:"stream"`
		Seq    uint64 `json:"seq"`
	} `json:"position"`
}

func readAudit(t *testing.T, s *Serve) []auditEntry {
	t.Helper()
	code, body := authGet(t, s, "/api/v1/audit", s.Token)
	if code != http.StatusOK {
		t.Fatalf("/api/v1/audit answered %d: %s", code, body)
	}
	var a struct {
		Level   string       `json:"level"`
		Note    string       `json:"note"`
		Entries []auditEntry `json:"entries"`
	}
	if err := json.Unmarshal([]byte(body), &a); err != nil {
		t.Fatal(err)
	}
	// A replication answer is stale, weakened to consistent_prefix (and
	// saying why) while a domain is behind its log's end with no drain
	// rate measured yet: the embedding duty's records about the items
	// written here may be on the vectors log but not applied yet.
	if a.Level != "stale" && (a.Level != "consistent_prefix" || !strings.Contains(a.Note, "cannot be measured")) {
		t.Fatalf("the audit trail answered at %q (note %q), want stale, or consistent_prefix saying the lag cannot be measured", a.Level, a.Note)
	}
	return a.Entries
}

// TestServeAudit: real gestures — a purge over the operator MCP, an
// eviction over the operator's HTTP route, a readmission over MCP — are
// each on GET /api/v1/audit (behind the token) with who asked, when,
// what, the op_id and the position their answers gave, newest first; the
// trail is derived from the log, so it is still there after a restart.
func TestServeAudit(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	if code, _ := authGet(t, s, "/api/v1/audit", ""); code != http.StatusUnauthorized {
		t.Fatalf("/api/v1/audit without the token answered %d, want 401", code)
	}
	c := s.HTTPClient(t)
	Call(t, c, "create_project", map[string]any{"key": "AUD", "name": "Audit"})
	item := createdItem(t, c, map[string]any{"project": "AUD", "title": "to be purged"})
	if got := readAudit(t, s); len(got) != 0 {
		t.Fatalf("ordinary writes are on the audit trail: %+v", got)
	}
	purge := Call(t, c, "purge_work_item", map[string]any{"key": item["key"]})
	if purge["outcome"] != "applied" {
		t.Fatalf("purge: %v", purge)
	}
	req, _ := http.NewRequest(http.MethodPost, s.BaseURL+"/api/v1/nodes/ghost/evict", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var evict struct {
		Steps []struct {
			Domain, OpID, Position string
		} `json:"steps"`
	}
	logs := len(domains.Builtin()) // a node gate goes on every domain's log
	if err := json.NewDecoder(resp.Body).Decode(&evict); err != nil || resp.StatusCode != http.StatusOK || len(evict.Steps) != logs {
		t.Fatalf("evict over HTTP: %d %+v %v", resp.StatusCode, evict, err)
	}
	resp.Body.Close()
	readmit := Call(t, c, "readmit_node", map[string]any{"node": "ghost"})

	got := readAudit(t, s)
	if len(got) != 1+2*logs {
		t.Fatalf("the trail holds %d entries, want %d (a purge, an eviction and a readmission on each of %d logs): %+v", len(got), 1+2*logs, logs, got)
	}
	for _, e := range got {
		if e.By != "operator" || e.Writer == "" || e.At == "" || e.OpID == "" || e.Position.Seq == 0 || e.Position.Stream == "" {
			t.Errorf("an entry does not say who, when, what, op_id and position: %+v", e)
		}
	}
	newest := got[0]
	if newest.Kind != "statelog.readmit" || newest.What != "readmit-ghost" {
		t.Errorf("the newest entry is %+v, want the readmission", newest)
	}
	steps, _ := readmit["steps"].([]any)
	opIDs := map[string]bool{}
	for _, st := range steps {
		opIDs[st.(map[string]any)["op_id"].(string)] = true
	}
	if !opIDs[newest.OpID] {
		t.Errorf("the readmission's entry names op_id %s, not one of its answer's steps %v", newest.OpID, opIDs)
	}
	var sawPurge, sawEvict int
	for _, e := range got {
		switch e.Kind {
		case "tracker.purge_work_item":
			sawPurge++
			if e.OpID != purge["op_id"] || "CREWLET_TRACKER_LOG@1:"+itoa(e.Position.Seq) != purge["position"] {
				t.Errorf("the purge's entry %+v does not match its answer %v", e, purge)
			}
			if e.What != "purge-"+item["key"].(string) {
				t.Errorf("the purge's entry says %q, want purge-%s", e.What, item["key"])
			}
		case "statelog.evict":
			sawEvict++
		}
	}
	if sawPurge != 1 || sawEvict != logs {
		t.Errorf("purges %d, evictions %d on the trail, want 1 and %d", sawPurge, sawEvict, logs)
	}

	s.Stop(t)
	s = StartServe(t, dir)
	if again := readAudit(t, s); len(again) != len(got) || again[0] != got[0] {
		t.Fatalf("after a restart the trail is %+v, was %+v", again, got)
	}
}

func itoa(n uint64) string { b, _ := json.Marshal(n); return string(b) }
