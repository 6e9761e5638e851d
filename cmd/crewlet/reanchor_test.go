//go:build integration

package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/fleet"
)

// recreateTrackerLog deletes the tracker's stream and creates it again
// with the same configuration, through a broker's client port: what an
// operator's tooling does by mistake.
func recreateTrackerLog(t *testing.T, url string) {
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
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	s, err := js.Stream(ctx, "CREWLET_TRACKER_LOG")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteStream(ctx, "CREWLET_TRACKER_LOG"); err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, info.Config); err != nil {
		t.Fatal(err)
	}
}

// trackerVerdicts reads every node's tracker verdict from the positions
// register, through n's retention answer.
func trackerVerdicts(t *testing.T, bin string, s *Serve) map[string]fleet.DomainFigures {
	t.Helper()
	var a fleet.Answer
	if err := json.Unmarshal([]byte(retentionStatus(t, bin, s, "--json")), &a); err != nil {
		t.Fatal(err)
	}
	out := map[string]fleet.DomainFigures{}
	for _, n := range a.Nodes {
		for _, d := range n.Domains {
			if d.Domain == "tracker" {
				out[n.Node] = d
			}
		}
	}
	return out
}

// waitVerdicts polls the register until ok holds of the verdicts.
func waitVerdicts(t *testing.T, bin string, s *Serve, what string, ok func(map[string]fleet.DomainFigures) bool) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for {
		v := trackerVerdicts(t, bin, s)
		if ok(v) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the register still says %+v", what, v)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// TestChildFleetReanchorRecreated: under a fleet of three `crewlet serve`
// children, the tracker's stream is deleted and created again. Every node
// finds it from the stream's creation instant, stops its tracker applier
// and refuses wrong_stream while its knowledge base serves. One node is
// re-anchored (crewlet retention reanchor --case recreated) with no
// restart: generation 2, its rows kept, serving reads and writes. The
// other two find the generation passed (statelog_generation_passed) and,
// restarted, ask the fleet for a snapshot at the new generation
// (statelog_behind_a_reanchor) and adopt it on their own.
func TestChildFleetReanchorRecreated(t *testing.T) {
	f := startChildFleet(t)
	defer func() {
		for _, s := range f.serves {
			s.Stop(t)
		}
	}()
	c1 := f.serves[0].HTTPClient(t)
	callRetry(t, c1, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	callRetry(t, c1, "create_work_item", map[string]any{"project": "ENG", "title": "before"})
	recreateTrackerLog(t, f.clientURLs[0])
	waitVerdicts(t, f.bin, f.serves[0], "every node finds the recreated stream", func(v map[string]fleet.DomainFigures) bool {
		return len(v) == 3 && v["n1"].WrongLog == "recreated" && v["n2"].WrongLog == "recreated" && v["n3"].WrongLog == "recreated"
	})
	refusedWith(t, c1, "get_work_item", map[string]any{"key": "ENG-1"}, "wrong_stream")
	callRetry(t, c1, "create_space", map[string]any{"key": "DOCS", "name": "Docs"})

	out, err := exec.Command(f.bin, "retention", "reanchor", "--node", f.serves[0].BaseURL, "--token-file", f.serves[0].TokenFile,
		"--log", "tracker", "--case", "recreated", "--json").CombinedOutput()
	if err != nil {
		t.Fatalf("crewlet retention reanchor: %v\n%s", err, out)
	}
	var r struct {
		Generation uint64 `json:"generation"`
		Case       string `json:"case"`
	}
	if err := json.Unmarshal(out, &r); err != nil || r.Generation != 2 || r.Case != "recreated" {
		t.Fatalf("reanchor answered %s (%v)", out, err)
	}
	for _, want := range []string{`"msg":"statelog_reanchor_started"`, `"msg":"statelog_reanchored"`} {
		if !strings.Contains(f.serves[0].Stderr.String(), want) {
			t.Errorf("n1 wrote no %s line", want)
		}
	}
	if got := callRetry(t, c1, "get_work_item", map[string]any{"key": "ENG-1"})["item"].(map[string]any)["title"]; got != "before" {
		t.Fatalf("n1 reads ENG-1 as %v after the reanchor", got)
	}
	w := callRetry(t, c1, "create_work_item", map[string]any{"project": "ENG", "title": "after"})
	if !strings.Contains(w["position"].(string), "@2:") {
		t.Fatalf("a write after the reanchor answered %v, want a generation 2 position", w)
	}
	waitVerdicts(t, f.bin, f.serves[0], "the others find the generation passed", func(v map[string]fleet.DomainFigures) bool {
		return v["n1"].Generation == 2 && v["n2"].WrongLog == "generation_passed" && v["n3"].WrongLog == "generation_passed"
	})
	if !strings.Contains(f.serves[1].Stderr.String(), `"msg":"statelog_generation_passed"`) {
		t.Errorf("n2 wrote no statelog_generation_passed line")
	}
	for i := 1; i < 3; i++ {
		f.serves[i].Stop(t)
		f.restart(t, i)
		for _, want := range []string{`"msg":"statelog_behind_a_reanchor"`, `"msg":"statelog_adopted"`} {
			if !strings.Contains(f.serves[i].Stderr.String(), want) {
				t.Fatalf("n%d restarted without %s (adopting the new generation):\n%s", i+1, want, f.serves[i].Stderr)
			}
		}
		c := f.serves[i].HTTPClient(t)
		if got := callRetry(t, c, "get_work_item", map[string]any{"key": "ENG-2"})["item"].(map[string]any)["title"]; got != "after" {
			t.Fatalf("n%d reads ENG-2 as %v after adopting", i+1, got)
		}
	}
	waitVerdicts(t, f.bin, f.serves[0], "the fleet in generation 2", func(v map[string]fleet.DomainFigures) bool {
		for _, n := range []string{"n1", "n2", "n3"} {
			if v[n].Generation != 2 || v[n].WrongLog != "" {
				return false
			}
		}
		return true
	})
}
