package rest_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/tracker"
)

func post(t *testing.T, url string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// TestPurgeRouteTakesItsOpID: the purge route answers its op_id; brought
// back as ?op_id= it answers the first purge, publishing nothing; an id the
// engine did not mint is refused before anything is written.
func TestPurgeRouteTakesItsOpID(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	svc := n.Tracker()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "doomed"}); err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(rest.Handler(rest.Config{Routes: append(rest.RoutesOf(n.Services()...), n.Routes()...)}))
	defer ts.Close()

	code, m := post(t, ts.URL+"/api/v1/work-items/ENG-1/purge?op_id=9b2c7a51-3f0e-4c2d-8e1a-0a1b2c3d4e5f.purge-ENG-1")
	if code != http.StatusBadRequest || m["refused"] != "invalid_argument" || m["key"] != "op_id" {
		t.Fatalf("a v4 op id: %d %v", code, m)
	}
	code, m = post(t, ts.URL+"/api/v1/work-items/ENG-1/purge")
	op, _ := m["op_id"].(string)
	if code != http.StatusOK || m["outcome"] != "applied" || op == "" {
		t.Fatalf("purge: %d %v", code, m)
	}
	info, _ := n.Log(engine.DomainTracker).Info(ctx)
	code, again := post(t, ts.URL+"/api/v1/work-items/ENG-1/purge?op_id="+op)
	if code != http.StatusOK || again["outcome"] != "applied" || again["position"] != m["position"] {
		t.Fatalf("purge again under its id: %d %v", code, again)
	}
	if after, _ := n.Log(engine.DomainTracker).Info(ctx); after.LastSeq != info.LastSeq {
		t.Fatalf("the retry published: %d -> %d", info.LastSeq, after.LastSeq)
	}
	code, m = post(t, ts.URL+"/api/v1/nodes/n2/evict?op_id="+op)
	if code != http.StatusConflict || m["refused"] != "op_reused" {
		t.Fatalf("a purge's id on an eviction: %d %v", code, m)
	}
	code, m = post(t, ts.URL+"/api/v1/nodes/n2/evict")
	if code != http.StatusOK || m["outcome"] != "applied" {
		t.Fatalf("evict: %d %v", code, m)
	}
	code, m = post(t, ts.URL+"/api/v1/work-items/ENG-1/purge?extra=1")
	if code != http.StatusBadRequest || m["key"] != "extra" {
		t.Fatalf("an unknown key: %d %v", code, m)
	}
}
