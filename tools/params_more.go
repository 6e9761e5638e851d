package tools

// The object argument kinds: an object and a list of objects whose fields
// are declared as params (bulk_update_work_items' set,
// bulk_create_work_items' items), each object parsed as strictly as a
// call's own arguments. Numbers and booleans are params_scalar.go's.

import (
	"encoding/json"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// moreSchema is the schema option of a kindObject or kindObjects param.
func moreSchema(p param, po []mcp.PropertyOption) mcp.ToolOption {
	item := mcp.NewTool("", schemaOptions(p.fields)...).InputSchema
	if p.kind == kindObject {
		return mcp.WithObject(p.name, append(po, mcp.Properties(item.Properties), mcp.AdditionalProperties(false))...)
	}
	if p.maxItems > 0 {
		po = append(po, mcp.MaxItems(p.maxItems))
	}
	po = append(po, mcp.Items(map[string]any{
		"type": "object", "properties": item.Properties, "required": item.Required, "additionalProperties": false,
	}))
	return mcp.WithArray(p.name, po...)
}

// parseMore reads a kindObject or kindObjects argument.
func parseMore(p param, v json.RawMessage) (any, *engine.Refusal) {
	if p.kind == kindObject {
		if jsonType(v) != "an object" {
			return nil, wrongType(p, v)
		}
		var req mcp.CallToolRequest
		req.Params.Arguments = v
		a, r := parseArgs(req, p.fields)
		if r != nil {
			r.Message = fmt.Sprintf("In %s: %s", p.name, r.Message)
			return nil, r
		}
		return a, nil
	}
	var items []json.RawMessage
	if jsonType(v) != "an array" || json.Unmarshal(v, &items) != nil {
		return nil, wrongType(p, v)
	}
	if p.maxItems > 0 && len(items) > p.maxItems {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q has %d entries; at most %d are accepted: split the call.", p.name, len(items), p.maxItems)
	}
	out := make([]args, len(items))
	for i, raw := range items {
		var req mcp.CallToolRequest
		req.Params.Arguments = raw
		a, r := parseArgs(req, p.fields)
		if r != nil {
			r.Message = fmt.Sprintf("In %s[%d]: %s", p.name, i, r.Message)
			return nil, r
		}
		out[i] = a
	}
	return out, nil
}

func (a args) object(name string) args {
	o, _ := a[name].(args)
	return o
}

func (a args) objects(name string) []args {
	o, _ := a[name].([]args)
	return o
}
