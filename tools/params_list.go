package tools

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// listSchema is the schema of a list argument's items: their type and
// enum. Lengths and counts are the parser's to enforce (see
// schemaOptions).
func listSchema(p Param) []mcp.PropertyOption {
	item := map[string]any{"type": "string"}
	if len(p.Enum) > 0 {
		item["enum"] = p.Enum
	}
	return []mcp.PropertyOption{mcp.Items(item)}
}

// ParseArray reads a list argument's items: a JSON array of at most
// p.MaxItems of them.
func ParseArray(p Param, v json.RawMessage) ([]json.RawMessage, *engine.Refusal) {
	if JSONType(v) != "an array" {
		return nil, WrongType(p, v)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, WrongType(p, v)
	}
	if p.MaxItems > 0 && len(items) > p.MaxItems {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q has %d items; at most %d are allowed. Split the change and call again.", p.Name, len(items), p.MaxItems)
	}
	return items, nil
}

// parseList reads a list of strings: a JSON array whose every item passes
// the checks a single string would, named by its place ("tags[2]") so the
// caller knows which one to fix.
func parseList(p Param, v json.RawMessage) (any, *engine.Refusal) {
	items, r := ParseArray(p, v)
	if r != nil {
		return nil, r
	}
	out := make([]string, 0, len(items))
	for i, raw := range items {
		s, r := ParseItem(p, fmt.Sprintf("%s[%d]", p.Name, i), raw, p.Enum)
		if r != nil {
			return nil, r
		}
		out = append(out, s)
	}
	return out, nil
}

// ParseItem checks one string of a list as a string argument of its own
// named name, with p's limits, then p.Each's check (an item with one may
// not be empty).
func ParseItem(p Param, name string, raw json.RawMessage, enum []string) (string, *engine.Refusal) {
	one := Param{Name: name, Kind: KindString, Desc: p.Desc, MaxBytes: p.MaxBytes, NonEmpty: p.NonEmpty || p.Each != nil, Enum: enum}
	v, r := parseValue(one, raw)
	if r != nil {
		return "", r
	}
	s := v.(string)
	if p.Each != nil {
		if r := p.Each(name, s); r != nil {
			return "", r
		}
	}
	return s, nil
}

// Strs is a list argument's strings.
func (a Args) Strs(name string) []string {
	s, _ := a[name].([]string)
	return s
}
