package main

import (
	"os"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/internal/peerbench"
)

// TestBenchWorkloads: --workloads keeps the kinds it names in the
// table's order, each at its concurrencies; "toy" names the three toy
// kinds; a name that is no kind is refused naming the kinds there are;
// none named is every workload.
func TestBenchWorkloads(t *testing.T) {
	all, err := workloads("")
	if err != nil || len(all) != len(peerbench.DefaultWorkloads()) {
		t.Fatalf("default: %d workloads, %v", len(all), err)
	}
	ws, err := workloads("search, create,toy")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range ws {
		got = append(got, w.String())
	}
	want := "create c=1,create c=64,search c=1,search c=64,toy_write c=1,toy_write c=64,toy_read_linearizable c=1,toy_read_linearizable c=64,toy_read_stale c=1,toy_read_stale c=64"
	if strings.Join(got, ",") != want {
		t.Errorf("workloads:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	if _, err := workloads("create,write"); err == nil || !strings.Contains(err.Error(), `"write"`) || !strings.Contains(err.Error(), "read_linearizable") {
		t.Errorf("an unknown kind: %v", err)
	}
	c := &BenchCommand{Main: &Main{Stderr: os.Stderr}}
	for _, args := range [][]string{{"--corpus", "0"}, {"--bulk-items", "20001"}, {"--workloads", "nope"},
		{"--embedder", "openai"}, {"--embedder", "builtin", "--node", "http://127.0.0.1:7420"}, {"--first-node", "0"}, {"--first-node", "6"}} {
		if _, err := c.parse(args); err == nil {
			t.Errorf("bench %v was accepted", args)
		}
	}
	// The nodes the bench starts embed nothing unless told: rqlite's job
	// embeds nothing either.
	if o, err := c.parse(nil); err != nil || o.embedder != "none" {
		t.Errorf("default --embedder %q, %v; want none", o.embedder, err)
	}
	if o, err := c.parse([]string{"--embedder", "builtin"}); err != nil || o.embedder != "builtin" {
		t.Errorf("--embedder builtin: %q, %v", o.embedder, err)
	}
	// The corpus is filed for every run that names its size, even one
	// whose workloads do not read it; by default only for those that do.
	if o, err := c.parse([]string{"--workloads", "create", "--corpus", "1000"}); err != nil || !o.alwaysCorpus || o.corpus != 1000 {
		t.Errorf("--corpus 1000: always %v, %d, %v", o.alwaysCorpus, o.corpus, err)
	}
	if o, err := c.parse([]string{"--workloads", "create"}); err != nil || o.alwaysCorpus {
		t.Errorf("no --corpus: always %v, %v", o.alwaysCorpus, err)
	}
}

// TestBenchFirstNode: --first-node counts a target's nodes from 1; a
// node past the target's last is refused naming how many it has.
func TestBenchFirstNode(t *testing.T) {
	for flag, want := range map[int]int{1: 0, 2: 1, 3: 2} {
		if got, err := firstNode(3, flag, "rqlite"); err != nil || got != want {
			t.Errorf("--first-node %d of 3: %d, %v; want %d", flag, got, err, want)
		}
	}
	if _, err := firstNode(3, 4, "rqlite"); err == nil || !strings.Contains(err.Error(), "has 3") {
		t.Errorf("node 4 of 3: %v", err)
	}
}
