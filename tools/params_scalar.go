package tools

// Number and boolean arguments: an estimate (a number >= 0) and a flag
// (list_work_items' trashed).

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// scalarSchema is a number's or a boolean's schema; a number states its
// inclusive range (min, and max where it is set).
func scalarSchema(p param, po []mcp.PropertyOption) mcp.ToolOption {
	if p.kind == kindBool {
		return mcp.WithBoolean(p.name, po...)
	}
	po = append(po, mcp.Min(float64(p.min)))
	if p.max > 0 {
		po = append(po, mcp.Max(float64(p.max)))
	}
	return mcp.WithNumber(p.name, po...)
}

// parseScalar reads a JSON number (a float64 in range) or a JSON boolean.
func parseScalar(p param, v json.RawMessage) (any, *engine.Refusal) {
	if p.kind == kindBool {
		switch string(bytes.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, wrongType(p, v)
	}
	if jsonType(v) != "a number" {
		return nil, wrongType(p, v)
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < float64(p.min) || (p.max > 0 && f > float64(p.max)) {
		if p.max > 0 {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a number from %d to %d.", p.name, string(bytes.TrimSpace(v)), p.min, p.max)
		}
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a number of at least %d.", p.name, string(bytes.TrimSpace(v)), p.min)
	}
	return f, nil
}

func (a args) num(name string) float64 {
	f, _ := a[name].(float64)
	return f
}

func (a args) numPtr(name string) *float64 {
	f, ok := a[name].(float64)
	if !ok {
		return nil
	}
	return &f
}

func (a args) flag(name string) bool {
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
