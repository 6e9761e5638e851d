package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/internal/peerbench"
)

// TestBenchCommand runs `crewlet bench` briefly against the node it
// starts itself (and, when CREWLET_RQLITED names an rqlited binary built
// from rqlite's source, against rqlite beside it): every workload
// completes operations on every target, and the table names them with the
// ratio column when there are two targets. The figures themselves are the
// benchmark's, never asserted.
func TestBenchCommand(t *testing.T) {
	args := []string{"bench", "--rounds", "1", "--duration", "300ms", "--workloads", "write,read_linearizable,read_stale"}
	if rq := os.Getenv("CREWLET_RQLITED"); rq != "" {
		args = append(args, "--rqlited", rq)
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(BuildBinary(t), append(args, "--json")...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crewlet bench: %v\n%s", err, stderr.String())
	}
	var figs []peerbench.Figure
	if err := json.Unmarshal(stdout.Bytes(), &figs); err != nil {
		t.Fatalf("bench --json printed %q: %v", stdout.String(), err)
	}
	targets := 1
	if os.Getenv("CREWLET_RQLITED") != "" {
		targets = 2
	}
	if len(figs) != 6*targets {
		t.Fatalf("bench printed %d figures, want 6 workloads on %d targets: %+v", len(figs), targets, figs)
	}
	for _, f := range figs {
		if f.Ok == 0 {
			t.Errorf("%s %s completed nothing: %d failed, first: %s", f.Target, f.Workload, f.Failed, f.FirstErr)
		}
	}
	var table bytes.Buffer
	if err := peerbench.WriteTable(&table, figs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "read_linearizable c=64") || (targets == 2) != strings.Contains(table.String(), "crewlet/rqlite") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := exec.Command(BuildBinary(t), "bench", "--rounds", "0").Run(); err == nil {
		t.Error("--rounds 0 was accepted")
	}
}
