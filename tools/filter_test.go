package tools

import (
	"errors"
	"slices"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// TestEveryEntryNamesAToolset: --toolsets can select every tool.
func TestEveryEntryNamesAToolset(t *testing.T) {
	for _, e := range catalogue {
		if !slices.Contains(Toolsets, e.Toolset) {
			tool, _ := e.Build(Deps{Surface: Operator})
			t.Errorf("%s: toolset %q is not one of %v", tool.Name, e.Toolset, Toolsets)
		}
	}
}

// TestFilterNarrowsEverySurface: --toolsets keeps one group, --read-only
// the reads, both together their intersection, and no filter ever adds a
// tool the surface does not offer.
func TestFilterNarrowsEverySurface(t *testing.T) {
	all := []any{(*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*fleet.Status)(nil)}
	names := func(s Surface, f Filter) []string {
		var out []string
		for _, st := range Set(Deps{Surface: s, Services: all, Filter: f}) {
			out = append(out, st.Tool.Name)
		}
		return out
	}
	for _, s := range []Surface{Operator, Seat} {
		full := names(s, Filter{})
		kbOnly := names(s, Filter{Toolsets: []string{ToolsetKB}})
		if !slices.Contains(kbOnly, NameGetPage) || slices.Contains(kbOnly, NameGetWorkItem) {
			t.Errorf("%s --toolsets kb: %v", s, kbOnly)
		}
		ro := names(s, Filter{ReadOnly: true})
		if slices.Contains(ro, NameCreateWorkItem) || !slices.Contains(ro, NameGetWorkItem) || slices.Contains(ro, NamePurgePage) {
			t.Errorf("%s --read-only: %v", s, ro)
		}
		both := names(s, Filter{Toolsets: []string{ToolsetTracker}, ReadOnly: true})
		for _, n := range both {
			if !slices.Contains(ro, n) || slices.Contains(kbOnly, n) {
				t.Errorf("%s --toolsets tracker --read-only offers %s", s, n)
			}
		}
		for _, n := range append(append(kbOnly, ro...), both...) {
			if !slices.Contains(full, n) {
				t.Errorf("%s: a filter added %s", s, n)
			}
		}
	}
	if seat := names(Seat, Filter{Toolsets: []string{ToolsetFleet}}); len(seat) != 0 {
		t.Errorf("seat --toolsets fleet: %v, want none (the fleet tools are operator only)", seat)
	}
}

func TestParseToolsets(t *testing.T) {
	got, err := ParseToolsets(" kb,tracker,kb ")
	if err != nil || !slices.Equal(got, []string{ToolsetKB, ToolsetTracker}) {
		t.Fatalf("ParseToolsets: %v %v", got, err)
	}
	if got, err := ParseToolsets("kb,all"); err != nil || got != nil {
		t.Fatalf("all: %v %v", got, err)
	}
	_, err = ParseToolsets("tracker,issues")
	var r *engine.Refusal
	if !errors.As(err, &r) || r.Code != engine.CodeInvalidArgument {
		t.Fatalf("unknown toolset: %v", err)
	}
}

// TestSeatWritesAreIdempotent: a seat's write derives its id from the
// unit and the arguments, so the hint says a repeat is safe; on the
// operator surface a create without op_id writes again.
func TestSeatWritesAreIdempotent(t *testing.T) {
	all := []any{(*tracker.Service)(nil), (*kb.Service)(nil)}
	for _, st := range Set(Deps{Surface: Seat, Services: all}) {
		if h := st.Tool.Annotations.IdempotentHint; h == nil || !*h {
			t.Errorf("seat %s: idempotentHint %v, want true", st.Tool.Name, h)
		}
	}
	for _, st := range Set(Deps{Surface: Operator, Services: all}) {
		if st.Tool.Name == NameCreateWorkItem && *st.Tool.Annotations.IdempotentHint {
			t.Errorf("operator create_work_item says idempotent")
		}
	}
}
