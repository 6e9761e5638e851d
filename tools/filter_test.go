package tools_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/fleettools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// TestEveryEntryNamesAToolset: --toolsets can select every tool: each
// toolset's name is one ParseToolsets takes, and naming it keeps every
// tool of the toolset.
func TestEveryEntryNamesAToolset(t *testing.T) {
	full := catalogueOf((*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*fleet.Status)(nil))
	if !slices.Equal(full.Names(), []string{trackertools.Name, kbtools.Name, fleettools.Name}) {
		t.Fatalf("toolsets %v", full.Names())
	}
	for _, ts := range full {
		sets, err := full.ParseToolsets(ts.Name)
		if err != nil {
			t.Fatal(err)
		}
		kept := tools.Catalogue{ts}.Set(tools.Deps{Surface: tools.Operator, Filter: tools.Filter{Toolsets: sets}})
		if len(kept) == 0 || len(kept) != len(tools.Catalogue{ts}.Set(tools.Deps{Surface: tools.Operator})) {
			t.Errorf("--toolsets %s keeps %d of its tools", ts.Name, len(kept))
		}
	}
}

// TestFilterNarrowsEverySurface: --toolsets keeps one group, --read-only
// the reads, both together their intersection, and no filter ever adds a
// tool the surface does not offer.
func TestFilterNarrowsEverySurface(t *testing.T) {
	all := []any{(*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*fleet.Status)(nil)}
	names := func(s tools.Surface, f tools.Filter) []string {
		var out []string
		for _, st := range catalogueOf(all...).Set(tools.Deps{Surface: s, Filter: f}) {
			out = append(out, st.Tool.Name)
		}
		return out
	}
	for _, s := range []tools.Surface{tools.Operator, tools.Seat} {
		full := names(s, tools.Filter{})
		kbOnly := names(s, tools.Filter{Toolsets: []string{kbtools.Name}})
		if !slices.Contains(kbOnly, kbtools.NameGetPage) || slices.Contains(kbOnly, trackertools.NameGetWorkItem) {
			t.Errorf("%s --toolsets kb: %v", s, kbOnly)
		}
		ro := names(s, tools.Filter{ReadOnly: true})
		if slices.Contains(ro, trackertools.NameCreateWorkItem) || !slices.Contains(ro, trackertools.NameGetWorkItem) || slices.Contains(ro, kbtools.NamePurgePage) {
			t.Errorf("%s --read-only: %v", s, ro)
		}
		both := names(s, tools.Filter{Toolsets: []string{trackertools.Name}, ReadOnly: true})
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
	if seat := names(tools.Seat, tools.Filter{Toolsets: []string{fleettools.Name}}); len(seat) != 0 {
		t.Errorf("seat --toolsets fleet: %v, want none (the fleet tools are operator only)", seat)
	}
}

func TestParseToolsets(t *testing.T) {
	full := catalogueOf((*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil))
	got, err := full.ParseToolsets(" kb,tracker,kb ")
	if err != nil || !slices.Equal(got, []string{kbtools.Name, trackertools.Name}) {
		t.Fatalf("ParseToolsets: %v %v", got, err)
	}
	if got, err := full.ParseToolsets("kb,all"); err != nil || got != nil {
		t.Fatalf("all: %v %v", got, err)
	}
	_, err = full.ParseToolsets("tracker,issues")
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
	for _, st := range catalogueOf(all...).Set(tools.Deps{Surface: tools.Seat}) {
		if h := st.Tool.Annotations.IdempotentHint; h == nil || !*h {
			t.Errorf("seat %s: idempotentHint %v, want true", st.Tool.Name, h)
		}
	}
	for _, st := range catalogueOf(all...).Set(tools.Deps{Surface: tools.Operator}) {
		if st.Tool.Name == trackertools.NameCreateWorkItem && *st.Tool.Annotations.IdempotentHint {
			t.Errorf("operator create_work_item says idempotent")
		}
	}
}
