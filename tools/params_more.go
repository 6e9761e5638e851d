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
func moreSchema(p Param, po []mcp.PropertyOption) mcp.ToolOption {
	item := mcp.NewTool("", schemaOptions(p.Fields)...).InputSchema
	if p.Kind == KindObject {
		return mcp.WithObject(p.Name, append(po, mcp.Properties(item.Properties), mcp.AdditionalProperties(false))...)
	}
	if p.MaxItems > 0 {
		po = append(po, mcp.MaxItems(p.MaxItems))
	}
	po = append(po, mcp.Items(map[string]any{
		"type": "object", "properties": item.Properties, "required": item.Required, "additionalProperties": false,
	}))
	return mcp.WithArray(p.Name, po...)
}

// parseMore reads a kindObject or kindObjects argument.
func parseMore(p Param, v json.RawMessage) (any, *engine.Refusal) {
	if p.Kind == KindObject {
		if JSONType(v) != "an object" {
			return nil, WrongType(p, v)
		}
		var req mcp.CallToolRequest
		req.Params.Arguments = v
		a, r := parseArgs(req, p.Fields)
		if r != nil {
			r.Message = fmt.Sprintf("In %s: %s", p.Name, r.Message)
			return nil, r
		}
		return a, nil
	}
	var items []json.RawMessage
	if JSONType(v) != "an array" || json.Unmarshal(v, &items) != nil {
		return nil, WrongType(p, v)
	}
	if p.MaxItems > 0 && len(items) > p.MaxItems {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q has %d entries; at most %d are accepted: split the call.", p.Name, len(items), p.MaxItems)
	}
	out := make([]Args, len(items))
	for i, raw := range items {
		var req mcp.CallToolRequest
		req.Params.Arguments = raw
		a, r := parseArgs(req, p.Fields)
		if r != nil {
			r.Message = fmt.Sprintf("In %s[%d]: %s", p.Name, i, r.Message)
			return nil, r
		}
		out[i] = a
	}
	return out, nil
}

func (a Args) Object(name string) Args {
	o, _ := a[name].(Args)
	return o
}

func (a Args) Objects(name string) []Args {
	o, _ := a[name].([]Args)
	return o
}
