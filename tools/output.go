package tools

import (
	"github.com/mark3labs/mcp-go/mcp"
)

// outputSchema is T's output schema (mcp.WithOutputSchema[T], so it cannot
// drift from the answer struct) cut to its top level: every property keeps
// its name and JSON type, nested objects and arrays lose their inner
// schemas. The seat catalogue must stay under 5 000 tokens with every
// tool in it, and the nested schemas (a work item's twenty fields, a read's
// position and lag, repeated on every tool) were over half of it; the tool
// descriptions name the fields a caller acts on instead.
func outputSchema[T any]() mcp.ToolOption {
	var full mcp.Tool
	mcp.WithOutputSchema[T]()(&full)
	props := make(map[string]any, len(full.OutputSchema.Properties))
	for name, v := range full.OutputSchema.Properties {
		prop := map[string]any{}
		if m, ok := v.(map[string]any); ok && m["type"] != nil {
			prop["type"] = nonNull(m["type"])
		}
		props[name] = prop
	}
	return func(t *mcp.Tool) {
		t.OutputSchema = mcp.ToolOutputSchema{Type: "object", Properties: props, Required: full.OutputSchema.Required}
	}
}

// nonNull drops "null" from a ["null", T] type. The answers never hold a
// null at their top level: pointers and optional lists are omitempty, and
// the handlers answer an empty list as [] (see the nil checks before
// Answer).
func nonNull(t any) any {
	list, ok := t.([]any)
	if !ok {
		return t
	}
	var keep []any
	for _, x := range list {
		if x != "null" {
			keep = append(keep, x)
		}
	}
	if len(keep) == 1 {
		return keep[0]
	}
	return keep
}
