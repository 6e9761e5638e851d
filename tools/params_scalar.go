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
func scalarSchema(p Param, po []mcp.PropertyOption) mcp.ToolOption {
	if p.Kind == KindBool {
		return mcp.WithBoolean(p.Name, po...)
	}
	po = append(po, mcp.Min(float64(p.Min)))
	if p.Max > 0 {
		po = append(po, mcp.Max(float64(p.Max)))
	}
	return mcp.WithNumber(p.Name, po...)
}

// parseScalar reads a JSON number (a float64 in range) or a JSON boolean.
func parseScalar(p Param, v json.RawMessage) (any, *engine.Refusal) {
	if p.Kind == KindBool {
		switch string(bytes.TrimSpace(v)) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, WrongType(p, v)
	}
	if JSONType(v) != "a number" {
		return nil, WrongType(p, v)
	}
	f, err := strconv.ParseFloat(string(bytes.TrimSpace(v)), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || f < float64(p.Min) || (p.Max > 0 && f > float64(p.Max)) {
		if p.Max > 0 {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a number from %d to %d.", p.Name, string(bytes.TrimSpace(v)), p.Min, p.Max)
		}
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a number of at least %d.", p.Name, string(bytes.TrimSpace(v)), p.Min)
	}
	return f, nil
}

func (a Args) Num(name string) float64 {
	f, _ := a[name].(float64)
	return f
}

func (a Args) NumPtr(name string) *float64 {
	f, ok := a[name].(float64)
	if !ok {
		return nil
	}
	return &f
}

func (a Args) Flag(name string) bool {
	b, _ := a[name].(bool)
	return b
}

func (a Args) BoolPtr(name string) *bool {
	b, ok := a[name].(bool)
	if !ok {
		return nil
	}
	return &b
}
