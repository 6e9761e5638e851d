package vectors_test

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// pair is one labelled duplicate pair of testdata/duplicates.txt.
type pair struct{ a, b issue }

type issue struct{ title, description string }

// loadPairs reads the labelled set.
func loadPairs(tb testing.TB) []pair {
	tb.Helper()
	f, err := os.Open("testdata/duplicates.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var out []pair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, b, ok := strings.Cut(line, "||")
		if !ok {
			tb.Fatalf("line %q is not a pair", line)
		}
		out = append(out, pair{parseIssue(tb, a), parseIssue(tb, b)})
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}

func parseIssue(tb testing.TB, s string) issue {
	t, d, ok := strings.Cut(s, "|")
	if !ok || strings.TrimSpace(t) == "" {
		tb.Fatalf("%q is not title | description", s)
	}
	return issue{strings.TrimSpace(t), strings.TrimSpace(d)}
}

// TestLabelledSet: the set has at least 200 pairs, each a distinct
// problem (no title twice).
func TestLabelledSet(t *testing.T) {
	pairs := loadPairs(t)
	if len(pairs) < 200 {
		t.Fatalf("%d pairs, want at least 200", len(pairs))
	}
	seen := map[string]bool{}
	for _, p := range pairs {
		for _, x := range []issue{p.a, p.b} {
			if seen[x.title] {
				t.Errorf("title %q twice", x.title)
			}
			seen[x.title] = true
		}
	}
}
