//go:build integration

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/internal/peerbench"
)

// TestBenchCommand runs `crewlet bench` briefly against the node it
// starts itself (and, when CREWLET_RQLITED names an rqlited binary built
// from rqlite's source, against rqlite beside it) and the bare floor in
// its own process: every workload completes operations on every target
// that has it, and the table names them with the ratio columns; every
// figure of a target the bench started has the CPU its processes spent an
// operation and the memory they held; Crewlet's writes, and only they,
// say where their time went. The figures themselves are the benchmark's,
// never asserted.
func TestBenchCommand(t *testing.T) {
	kinds := "mcp_floor,create,update,get,read_linearizable,get_mcp,search,bulk,toy_write"
	args := []string{"bench", "--rounds", "1", "--duration", "300ms", "--workloads", kinds, "--corpus", "300", "--bulk-items", "100"}
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
	// Crewlet runs every kind (17 workloads: bulk alone, the rest also at
	// c=64); rqlite all but the MCP ones; the floor the writes and the
	// linearizable reads; the SQL floor the same-job kinds (create,
	// update, get, search, bulk: 9 workloads).
	want := map[string]int{"crewlet": 17, "floor": 8, peerbench.SQLFloorTarget: 9}
	if os.Getenv("CREWLET_RQLITED") != "" {
		want["rqlite"] = 13
	}
	got := map[string]int{}
	measured := map[string]bool{}
	for _, f := range figs {
		got[f.Target]++
		if f.Ok == 0 {
			t.Errorf("%s %s completed nothing: %d failed, first: %s", f.Target, f.Workload, f.Failed, f.FirstErr)
		}
		if f.CPUPerOp > 0 && f.RSS > 0 && f.PSS > 0 {
			measured[f.Target] = true
		}
		checkBenchFigure(t, f)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("figures by target %v, want %v", got, want)
	}
	// Both targets' processes are the bench's own, so the CPU they spent
	// and the memory they held are read (on Linux, from /proc). CPU in
	// 10 ms ticks: a short workload on a loaded machine may not reach
	// one, the whole run does. The floors run in the bench's process,
	// whose memory is not theirs.
	for tg := range want {
		if runtime.GOOS == "linux" && tg != "floor" && tg != peerbench.SQLFloorTarget && !measured[tg] {
			t.Errorf("no figure of %s has the CPU and memory its processes spent", tg)
		}
	}
	// The bench says which node of each target the first worker talks
	// to, and, of a real rqlite, its Raft role there: a node alone leads.
	first := benchSaid(stderr.String(), "first worker ")
	if !strings.HasPrefix(first, "first worker (every c=1 run) on node 1 of each: crewlet http://127.0.0.1:") ||
		(want["rqlite"] > 0) != strings.Contains(first, " (Leader)") {
		t.Errorf("the bench said %q of its first worker", first)
	}
	var table bytes.Buffer
	if err := peerbench.WriteTable(&table, figs); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "read_linearizable c=64") || (want["rqlite"] > 0) != strings.Contains(table.String(), "crewlet/rqlite") ||
		!strings.Contains(table.String(), "DECIDE") || !strings.Contains(table.String(), "P50 crewlet/floor") ||
		!strings.Contains(table.String(), "CPU/OP crewlet/sql") {
		t.Errorf("table:\n%s", table.String())
	}
	if err := exec.Command(BuildBinary(t), "bench", "--rounds", "0").Run(); err == nil {
		t.Error("--rounds 0 was accepted")
	}
}

// benchSaid is the last line of what the bench wrote to its standard
// error that begins with prefix, or "".
func benchSaid(stderr, prefix string) string {
	said := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, prefix) {
			said = l
		}
	}
	return said
}

// checkBenchFigure holds one figure to what its target and kind say of it.
func checkBenchFigure(t *testing.T, f peerbench.Figure) {
	t.Helper()
	// Crewlet's writes say where their time went, read from the
	// node's /metrics: every applied write decided, appended and
	// settled. Nothing else says so.
	kind, _, _ := strings.Cut(f.Workload, " ")
	phased := f.Target == "crewlet" && (kind == "create" || kind == "update" || kind == "bulk" || kind == "toy_write")
	for _, p := range []string{"decide", "append", "settle"} {
		if took, ok := f.WritePhases[p]; phased != ok || (phased && took <= 0) {
			t.Errorf("%s %s: write phase %s is %v (present %v)", f.Target, f.Workload, p, took, ok)
		}
	}
	// After a measurement of writes the bench waited for the servers
	// it started to fall quiet, at least one interval.
	if runtime.GOOS == "linux" && f.Target != "floor" && strings.Contains(",create,update,bulk,toy_write,", ","+kind+",") && f.Drain <= 0 {
		t.Errorf("%s %s: no drain after its writes", f.Target, f.Workload)
	}
	// Creates check the stream's creation instant; updates do not.
	if took, ok := f.WritePhases["check"]; (kind == "create" || kind == "toy_write") && f.Target == "crewlet" && (!ok || took <= 0) {
		t.Errorf("%s %s: no check phase (%v, present %v)", f.Target, f.Workload, took, ok)
	} else if kind == "update" && ok {
		t.Errorf("%s %s: an update observed a check phase (%v)", f.Target, f.Workload, took)
	}
}

// TestBenchCommandFleet runs `crewlet bench --replicas 3`: it starts three
// nodes of one fleet on loopback (it says so, naming three addresses), and
// every stale read — the workers spread over the three — finds the row the
// set-up wrote through the first, which only nodes of one fleet can do
// (the set-up itself reads it at linearizable on each). With --profile,
// every node's CPU profile of each workload is written where it says.
// Flags that would size nothing are refused.
func TestBenchCommandFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("a three-node fleet")
	}
	var stdout, stderr bytes.Buffer
	profiles := t.TempDir()
	cmd := exec.Command(BuildBinary(t), "bench", "--replicas", "3", "--rounds", "1", "--duration", "300ms", "--workloads", "create,toy_read_stale", "--floor=false", "--json", "--profile", profiles, "--first-node", "2")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("crewlet bench --replicas 3: %v\n%s", err, stderr.String())
	}
	said := benchSaid(stderr.String(), "crewlet: ")
	if !strings.HasPrefix(said, "crewlet: 3 nodes on loopback, logs at 3 replica(s), embedder.provider none: ") || strings.Count(said, "http://127.0.0.1:") != 3 {
		t.Errorf("the bench said %q, want three nodes named", said)
	}
	// --first-node 2: the first worker talks to the second node started.
	if nodes := strings.Fields(said); len(nodes) < 3 ||
		benchSaid(stderr.String(), "first worker ") != "first worker (every c=1 run) on node 2 of each: crewlet "+nodes[len(nodes)-2] {
		t.Errorf("the bench said %q of its first worker, of the nodes %q", benchSaid(stderr.String(), "first worker "), said)
	}
	var figs []peerbench.Figure
	if err := json.Unmarshal(stdout.Bytes(), &figs); err != nil {
		t.Fatalf("bench --json printed %q: %v", stdout.String(), err)
	}
	if len(figs) != 4 {
		t.Fatalf("bench printed %d figures, want 4: %+v", len(figs), figs)
	}
	for _, f := range figs {
		if f.Ok == 0 || (strings.HasPrefix(f.Workload, "toy_read_stale") && f.Failed > 0) {
			t.Errorf("%s: %d done, %d failed, first: %s", f.Workload, f.Ok, f.Failed, f.FirstErr)
		}
		// One profile a node, gzipped as go tool pprof reads it, and for
		// the creates one more of what they left behind.
		kind, conc, _ := strings.Cut(f.Workload, " c=")
		var names []string
		for node := 1; node <= 3; node++ {
			names = append(names, fmt.Sprintf("crewlet-%s-c%s-%d.pprof", kind, conc, node))
			if kind == "create" {
				names = append(names, fmt.Sprintf("crewlet-%s-c%s-%d%s.pprof", kind, conc, node, peerbench.AfterSuffix))
			}
		}
		for _, name := range names {
			path := filepath.Join(profiles, name)
			b, err := os.ReadFile(path)
			if err != nil || len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
				t.Errorf("%s: %d bytes, %v; the bench said:\n%s", path, len(b), err, stderr.String())
			} else if !strings.Contains(stderr.String(), "profile: "+path) {
				t.Errorf("the bench did not say where %s went", path)
			}
		}
	}
	// Each refused for --replicas itself: without its check, the last
	// would still fail (no token, no node), saying something else.
	for _, args := range [][]string{{"--replicas", "0"}, {"--replicas", "6"}, {"--replicas", "3", "--node", "http://127.0.0.1:1"}} {
		out, err := exec.Command(BuildBinary(t), append([]string{"bench"}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "--replicas") {
			t.Errorf("bench %v: %v %s, want it refused for --replicas", args, err, out)
		}
	}
}
