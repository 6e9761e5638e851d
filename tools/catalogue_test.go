package tools

import (
	"encoding/json"
	"github.com/crewlet/crewlet/engine/kb"
	"testing"
)

// seatCatalogueBudget is the seat toolset's whole catalogue, in tokens
// (bytes/4), by the issue.
const seatCatalogueBudget = 5000

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
	seat := Deps{Surface: Seat, KB: (*kb.Service)(nil)}
	model, wire := catalogueBytes(t, seat)
	tokens := model / 4
	t.Logf("seat catalogue: %d tools, %d bytes = %d tokens (names, descriptions, input and output schemas); %d bytes = %d tokens with annotations, as tools/list sends it",
		len(Set(seat)), model, tokens, wire, wire/4)
	if tokens >= seatCatalogueBudget {
		t.Fatalf("the seat catalogue is %d tokens, over the budget of %d: tighten descriptions or schemas", tokens, seatCatalogueBudget)
	}
}
