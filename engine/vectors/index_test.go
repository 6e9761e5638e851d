package vectors

import (
	"context"
	"fmt"
	"testing"

	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/semantic"
)

// TestIndexTwoPasses: past 2 × candidates entries the index picks its
// candidates by sign bits before ranking them; it still finds a stored
// text as its own nearest, and most of the exact top 10.
func TestIndexTwoPasses(t *testing.T) {
	const n = 5_000
	e := embed.NewBuiltin()
	texts := syntheticTexts(n)
	vecs, _ := e.Embed(context.Background(), texts)
	idx := newIndex(e.Model(), e.Dims())
	for i, v := range vecs {
		idx.put(fmt.Sprintf("wi_%d", i), meta{kind: semantic.WorkItem, model: e.Model()}, v)
	}
	if n <= 2*candidates(10) {
		t.Fatalf("%d entries do not take the two-pass search", n)
	}
	agree, total := 0, 0
	for q := 0; q < n; q += 250 {
		got := idx.nearest(vecs[q], []semantic.Kind{semantic.WorkItem}, 10)
		if len(got) != 10 || got[0].Similarity < 0.97 {
			t.Fatalf("query %d (%q): nearest %+v, want itself first", q, texts[q], got)
		}
		in := map[string]bool{}
		for _, h := range got {
			in[h.ID] = true
		}
		for _, i := range bareScan(vecs, vecs[q], 10) {
			total++
			if in[fmt.Sprintf("wi_%d", i)] {
				agree++
			}
		}
	}
	if r := float64(agree) / float64(total); r < 0.9 {
		t.Errorf("recall@10 of the two-pass search %.2f, want at least 0.9", r)
	}
}

// TestIndexPutRemove: replacing and removing entries keeps every slot's
// id, code and bits together (removal swaps the last entry in), and a
// row of another model is known to the duty but never searched.
func TestIndexPutRemove(t *testing.T) {
	e := embed.NewBuiltin()
	texts := []string{"login fails", "export slow", "invoice wrong", "photo upload crash"}
	vecs, _ := e.Embed(context.Background(), texts)
	idx := newIndex(e.Model(), e.Dims())
	for i, v := range vecs {
		idx.put(fmt.Sprintf("wi_%d", i), meta{kind: semantic.WorkItem, model: e.Model(), hash: "h"}, v)
	}
	idx.remove("wi_0")
	idx.put("wi_2", meta{kind: semantic.WorkItem, model: "other@3"}, []float32{1, 0, 0})
	if idx.count(semantic.WorkItem) != 2 || len(idx.meta) != 3 {
		t.Fatalf("count %d, meta %d: want 2 searchable, 3 known", idx.count(semantic.WorkItem), len(idx.meta))
	}
	for i, q := range vecs {
		got := idx.nearest(q, []semantic.Kind{semantic.WorkItem}, 1)
		want := fmt.Sprintf("wi_%d", i)
		switch i {
		case 0, 2:
			if len(got) == 1 && got[0].ID == want {
				t.Errorf("%s was removed or replaced but is still found", want)
			}
		default:
			if len(got) != 1 || got[0].ID != want {
				t.Errorf("query %q: %+v, want %s", texts[i], got, want)
			}
		}
	}
}
