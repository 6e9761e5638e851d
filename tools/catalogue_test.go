package tools_test

import (
	"encoding/json"
	"testing"

	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/fleettools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// seatCatalogueBudget is the seat toolset's whole catalogue, in tokens
// (bytes/4), by the issue.
const seatCatalogueBudget = 5000

// catalogueBytes is the size of what a model reads of a toolset: each
// tool's name, description, input schema and output schema, as JSON, as
// tools/list sends them (the wire form, so a raw output schema counts as
// sent). The annotations are hints for the client, not text for the
// model, and are left out (TestSeatCatalogue logs the tools/list size with
// them too).
func catalogueBytes(t *testing.T, d surface) (model, wire int) {
	t.Helper()
	for _, st := range d.set() {
		full, err := json.Marshal(st.Tool)
		if err != nil {
			t.Fatal(err)
		}
		wire += len(full)
		var sent struct {
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"inputSchema"`
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := json.Unmarshal(full, &sent); err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(sent)
		if err != nil {
			t.Fatal(err)
		}
		model += len(b)
	}
	return model, wire
}

// TestSeatCatalogue: the seat toolset's catalogue stays under 5 000
// tokens, measured as bytes/4 of its JSON.
func TestSeatCatalogue(t *testing.T) {
	// The whole seat catalogue: the tracker's and the knowledge base's.
	seat := surface{tools.Seat, catalogueOf((*tracker.Service)(nil), (*kb.Service)(nil))}
	model, wire := catalogueBytes(t, seat)
	tokens := model / 4
	t.Logf("seat catalogue: %d tools, %d bytes = %d tokens (names, descriptions, input and output schemas); %d bytes = %d tokens with annotations, as tools/list sends it",
		len(seat.set()), model, tokens, wire, wire/4)
	if tokens >= seatCatalogueBudget {
		t.Fatalf("the seat catalogue is %d tokens, over the budget of %d: tighten descriptions or schemas", tokens, seatCatalogueBudget)
	}
}

// TestToolsetsAreFiltersOverOneCatalogue: the seat, operator and read-only
// toolsets are filters over the one catalogue: the seat's is the
// operator's less its operator-only tools, the read-only one holds every
// tool whose read-only hint is set and nothing else, and a Deps that
// names no surface builds nothing rather than the operator's toolset.
func TestToolsetsAreFiltersOverOneCatalogue(t *testing.T) {
	all := []any{(*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*fleet.Status)(nil)}
	names := func(s tools.Surface) map[string]bool {
		out := map[string]bool{}
		for _, st := range catalogueOf(all...).Set(tools.Deps{Surface: s}) {
			out[st.Tool.Name] = true
		}
		return out
	}
	op, seat, ro := names(tools.Operator), names(tools.Seat), names(tools.ReadOnly)
	for n := range seat {
		if !op[n] {
			t.Errorf("seat tool %s is not an operator tool", n)
		}
	}
	for _, n := range []string{trackertools.NamePurgeWorkItem, kbtools.NamePurgePage, fleettools.NameEvictNode, fleettools.NameReadmitNode, fleettools.NameRetentionStatus} {
		if seat[n] || !op[n] {
			t.Errorf("%s: seat %v, operator %v; want operator only", n, seat[n], op[n])
		}
	}
	for _, st := range catalogueOf(all...).Set(tools.Deps{Surface: tools.Operator}) {
		readOnly := st.Tool.Annotations.ReadOnlyHint != nil && *st.Tool.Annotations.ReadOnlyHint
		if ro[st.Tool.Name] != readOnly {
			t.Errorf("%s: in the read-only toolset %v, read-only hint %v", st.Tool.Name, ro[st.Tool.Name], readOnly)
		}
	}
	if len(ro) == 0 {
		t.Fatal("the read-only toolset is empty")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a Deps naming no surface built a toolset")
		}
	}()
	catalogueOf(all...).Set(tools.Deps{})
}
