package semantic_test

import (
	"testing"

	"github.com/crewlet/crewlet/engine/semantic"
)

func TestFuse(t *testing.T) {
	got := semantic.Fuse([]string{"a", "b", "c"}, []string{"c", "d", "a"})
	var ids []string
	for _, f := range got {
		ids = append(ids, f.ID)
	}
	// a: 1/61+1/63, c: 1/63+1/61 (tie: a is higher in the first list),
	// b: 1/62, d: 1/62 (tie: b is in the first list).
	want := []string{"a", "c", "b", "d"}
	for i := range want {
		if ids[i] != want[i] {
			t.Fatalf("fused %v, want %v", ids, want)
		}
	}
	if got[0].Ranks[0] != 1 || got[0].Ranks[1] != 3 || got[3].Ranks[0] != 0 {
		t.Errorf("ranks %+v", got)
	}
	if len(semantic.Fuse()) != 0 || len(semantic.Fuse(nil, []string{"x"})) != 1 {
		t.Error("empty lists")
	}
}

func TestCoverage(t *testing.T) {
	c := semantic.NewCoverage(7, 3, "m")
	if c.Embedded != 3 || c.Ratio != 1 {
		t.Errorf("%+v: embedded past the total is capped", c)
	}
	if c := semantic.NewCoverage(1, 3, "m"); c.Ratio != 0.3333 {
		t.Errorf("ratio %v", c.Ratio)
	}
	if c := semantic.NewCoverage(0, 0, "m"); c.Ratio != 0 {
		t.Errorf("an empty corpus: %+v", c)
	}
}
