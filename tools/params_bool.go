package tools

import (
	"encoding/json"

	"github.com/crewlet/crewlet/engine"
)

// parseBool reads a boolean argument: JSON true or false only (never the
// string "true", which a model may send and must be told to fix).
func parseBool(p param, v json.RawMessage) (any, *engine.Refusal) {
	if jsonType(v) != "a boolean" {
		return nil, wrongType(p, v)
	}
	var b bool
	if err := json.Unmarshal(v, &b); err != nil {
		return nil, wrongType(p, v)
	}
	return b, nil
}

func (a args) bool(name string) bool {
	b, _ := a[name].(bool)
	return b
}

func (a args) boolPtr(name string) *bool {
	b, ok := a[name].(bool)
	if !ok {
		return nil
	}
	return &b
}
