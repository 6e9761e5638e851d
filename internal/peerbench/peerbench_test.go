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
