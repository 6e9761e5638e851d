package peerbench

import (
	"strings"
	"testing"
)

// TestNodeOf: the workers take the nodes in turn from the first-th, so
// worker 0 (every c=1 run) is on it, and a concurrent run still reaches
// every node; the nodes keep their order.
func TestNodeOf(t *testing.T) {
	bases := []string{"http://a/", "http://b", "http://c"}
	for first, want := range map[int]string{0: "a b c a", 1: "b c a b", 2: "c a b c"} {
		var got []string
		for w := 0; w < 4; w++ {
			got = append(got, strings.TrimPrefix(NodeOf(bases, first, w), "http://"))
		}
		if strings.Join(got, " ") != want {
			t.Errorf("from node %d: workers 0-3 on %q, want %q", first, got, want)
		}
	}
	if bases[0] != "http://a/" {
		t.Errorf("the nodes were changed: %q", bases)
	}
}

// TestPlanFilesCorpus: the set-up files the corpus where a workload reads
// it (search, bulk) or where the run asked for it, and not for a run of
// writes alone otherwise.
func TestPlanFilesCorpus(t *testing.T) {
	writes := []Workload{{Create, 1}, {Update, 64}}
	if p := PlanFor(writes, 1000, 100); p.filesCorpus() {
		t.Error("a run of writes alone filed the corpus")
	}
	p := PlanFor(writes, 1000, 100)
	p.AlwaysCorpus = true
	if !p.filesCorpus() {
		t.Error("a run that asked for the corpus did not file it")
	}
	for _, k := range []Kind{Search, Bulk} {
		if p := PlanFor([]Workload{{k, 1}}, 1000, 100); !p.filesCorpus() {
			t.Errorf("%s did not file the corpus it reads", k)
		}
	}
}
