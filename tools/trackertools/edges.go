package trackertools

// The edges argument type of update_work_item's add_relations and
// remove_relations: a list of {kind, key} objects, each key a work item's.

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
	"github.com/crewlet/crewlet/tools"
)

// maxEdgeKind bounds an edge's kind before the enum check names it.
const maxEdgeKind = 32

// edgesType is a list of edges; the param's Enum is the kinds allowed.
var edgesType = &tools.Custom{
	Type:   "an array of {kind, key} objects",
	Schema: edgesSchema,
	Parse:  parseEdges,
}

// edgesSchema states each item's fields and the kinds; lengths and counts
// are the parser's to enforce.
func edgesSchema(p tools.Param, po []mcp.PropertyOption) mcp.ToolOption {
	kindSchema := map[string]any{"type": "string"}
	if len(p.Enum) > 0 {
		kindSchema["enum"] = p.Enum
	}
	return mcp.WithArray(p.Name, append(po, mcp.Items(map[string]any{
		"type":       "object",
		"properties": map[string]any{"kind": kindSchema, "key": map[string]any{"type": "string"}},
		"required":   []string{"kind", "key"},
	}))...)
}

// parseEdges reads the list, every edge checked and named by its place
// ("add_relations[2]").
func parseEdges(p tools.Param, v json.RawMessage) (any, *engine.Refusal) {
	items, r := tools.ParseArray(p, v)
	if r != nil {
		return nil, r
	}
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

func parseEdge(p tools.Param, i int, raw json.RawMessage) (tracker.Edge, *engine.Refusal) {
	name := fmt.Sprintf("%s[%d]", p.Name, i)
	var fields map[string]json.RawMessage
	if tools.JSONType(raw) != "an object" || json.Unmarshal(raw, &fields) != nil {
		return tracker.Edge{}, engine.Refuse(engine.CodeInvalidArgument, "Argument %q must be an object {\"kind\": ..., \"key\": ...}, not %s: %s", name, tools.JSONType(raw), p.Desc)
	}
	var extra []string
	for k := range fields {
		if k != "kind" && k != "key" {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return tracker.Edge{}, engine.Refuse(engine.CodeInvalidArgument, "Argument %q has the unknown field %s; an edge is {\"kind\": ..., \"key\": ...}. Remove it and call again.", name, tools.Quote(extra[0]))
	}
	var e tracker.Edge
	for _, f := range []string{"kind", "key"} {
		v, ok := fields[f]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			return tracker.Edge{}, engine.Refuse(engine.CodeInvalidArgument, "Argument %q lacks %q: an edge is {\"kind\": one of %s, \"key\": a work item key like ENG-8}.", name, f, strings.Join(p.Enum, ", "))
		}
	}
	kindName, keyName := name+".kind", name+".key"
	k, r := tools.ParseItem(tools.Param{Desc: p.Desc, NonEmpty: true, MaxBytes: maxEdgeKind}, kindName, fields["kind"], p.Enum)
	if r != nil {
		return e, r
	}
	key, r := tools.ParseItem(tools.Param{Desc: p.Desc, Each: checkItemKey, MaxBytes: maxItemKey}, keyName, fields["key"], nil)
	if r != nil {
		return e, r
	}
	if len(p.Enum) > 0 && !slices.Contains(p.Enum, k) {
		return e, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be one of %s.", kindName, tools.Quote(k), strings.Join(p.Enum, ", "))
	}
	return tracker.Edge{Kind: k, Key: key}, nil
}

// edges is an edges argument's list.
func edges(a tools.Args, name string) []tracker.Edge {
	e, _ := a[name].([]tracker.Edge)
	return e
}
