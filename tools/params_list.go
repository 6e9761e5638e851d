package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// maxEdgeKind bounds an edge's kind before the enum check names it.
const maxEdgeKind = 32

// listSchema is the schema of a list argument's items: their type, an
// edge's fields and the enums. Lengths and counts are the parser's to
// enforce (see schemaOptions).
func listSchema(p param) []mcp.PropertyOption {
	if p.kind == kindEdges {
		kindSchema := map[string]any{"type": "string"}
		if len(p.enum) > 0 {
			kindSchema["enum"] = p.enum
		}
		return []mcp.PropertyOption{mcp.Items(map[string]any{
			"type":       "object",
			"properties": map[string]any{"kind": kindSchema, "key": map[string]any{"type": "string"}},
			"required":   []string{"kind", "key"},
		})}
	}
	item := map[string]any{"type": "string"}
	if len(p.enum) > 0 {
		item["enum"] = p.enum
	}
	return []mcp.PropertyOption{mcp.Items(item)}
}

// parseList reads a list argument: a JSON array whose every item passes
// the checks a single string (or edge) would, named by its place
// ("tags[2]") so the caller knows which one to fix.
func parseList(p param, v json.RawMessage) (any, *engine.Refusal) {
	if jsonType(v) != "an array" {
		return nil, wrongType(p, v)
	}
	var items []json.RawMessage
	if err := json.Unmarshal(v, &items); err != nil {
		return nil, wrongType(p, v)
	}
	if p.maxItems > 0 && len(items) > p.maxItems {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q has %d items; at most %d are allowed. Split the change and call again.", p.name, len(items), p.maxItems)
	}
	if p.kind == kindEdges {
		out := make([]tracker.Edge, 0, len(items))
		for i, raw := range items {
			e, r := parseEdge(p, i, raw)
			if r != nil {
				return nil, r
			}
			out = append(out, e)
		}
		return out, nil
	}
	out := make([]string, 0, len(items))
	for i, raw := range items {
		s, r := parseItemString(p, fmt.Sprintf("%s[%d]", p.name, i), raw, p.enum)
		if r != nil {
			return nil, r
		}
		out = append(out, s)
	}
	return out, nil
}

// parseItemString checks one string of a list as a string argument of its
// own named name.
func parseItemString(p param, name string, raw json.RawMessage, enum []string) (string, *engine.Refusal) {
	one := param{name: name, kind: kindString, desc: p.desc, maxBytes: p.maxBytes, nonEmpty: p.nonEmpty || p.itemKeys, enum: enum}
	v, r := parseValue(one, raw)
	if r != nil {
		return "", r
	}
	s := v.(string)
	if p.itemKeys {
		if r := checkItemKey(name, s); r != nil {
			return "", r
		}
	}
	return s, nil
}

func parseEdge(p param, i int, raw json.RawMessage) (tracker.Edge, *engine.Refusal) {
	name := fmt.Sprintf("%s[%d]", p.name, i)
	var fields map[string]json.RawMessage
	if jsonType(raw) != "an object" || json.Unmarshal(raw, &fields) != nil {
		return tracker.Edge{}, engine.Refuse(engine.CodeInvalidArgument, "Argument %q must be an object {\"kind\": ..., \"key\": ...}, not %s: %s", name, jsonType(raw), p.desc)
	}
	var extra []string
	for k := range fields {
		if k != "kind" && k != "key" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return tracker.Edge{}, engine.Refuse(engine.CodeInvalidArgument, "Argument %q has the unknown field %s; an edge is {\"kind\": ..., \"key\": ...}. Remove it and call again.", name, quote(extra[0]))
	}
	var e tracker.Edge
	for _, f := range []string{"kind", "key"} {
		v, ok := fields[f]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return tracker.Edge{}, engine.Refuse(engine.CodeInvalidArgument, "Argument %q lacks %q: an edge is {\"kind\": one of %s, \"key\": a work item key like ENG-8}.", name, f, strings.Join(p.enum, ", "))
		}
	}
	kindName, keyName := name+".kind", name+".key"
	k, r := parseItemString(param{desc: p.desc, nonEmpty: true, maxBytes: maxEdgeKind}, kindName, fields["kind"], p.enum)
	if r != nil {
		return e, r
	}
	key, r := parseItemString(param{desc: p.desc, itemKeys: true, maxBytes: maxItemKey}, keyName, fields["key"], nil)
	if r != nil {
		return e, r
	}
	if len(p.enum) > 0 && !slices.Contains(p.enum, k) {
		return e, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be one of %s.", kindName, quote(k), strings.Join(p.enum, ", "))
	}
	return tracker.Edge{Kind: k, Key: key}, nil
}

func (a args) strs(name string) []string {
	s, _ := a[name].([]string)
	return s
}

func (a args) edges(name string) []tracker.Edge {
	e, _ := a[name].([]tracker.Edge)
	return e
}
