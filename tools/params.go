package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// kind is the JSON type an argument must have.
type kind int

const (
	kindString kind = iota
	kindInteger
	// kindStrings and kindEdges are lists (params_list.go).
	kindStrings
	kindEdges
	// kindBool is a JSON true or false (params_bool.go).
	kindBool
)

func (k kind) String() string {
	switch k {
	case kindInteger:
		return "an integer"
	case kindStrings:
		return "an array of strings"
	case kindEdges:
		return "an array of {kind, key} objects"
	case kindBool:
		return "a boolean"
	}
	return "a string"
}

// param declares one argument once: the input schema and the parser are
// both built from it, so they cannot disagree.
type param struct {
	name     string
	kind     kind
	required bool
	desc     string
	// Strings: maxBytes bounds the UTF-8 length and every string has one
	// (TestEveryTextArgumentIsBounded), stated in the schema as maxLength
	// so a model sees it; nonEmpty refuses ""; enum restricts the value;
	// long marks text that may span lines (descriptions, bodies,
	// comments), where line breaks and tabs are allowed. Every string is
	// checked in one place (checkText).
	maxBytes int
	nonEmpty bool
	enum     []string
	long     bool
	// Integers: the inclusive range.
	min, max int64
	// Lists: maxItems bounds the length; maxBytes, nonEmpty and enum apply
	// to each string (for kindEdges, enum is the kinds allowed); itemKeys
	// makes each string (each edge's key) a work item key.
	maxItems int
	itemKeys bool
}

// schemaOptions turns params into mcp-go tool options. The input schema
// is closed (additionalProperties false). maxLength counts characters while
// the engine's limits count bytes, so the schema states the byte limit as
// an upper bound and the parser checks bytes.
func schemaOptions(params []param) []mcp.ToolOption {
	opts := make([]mcp.ToolOption, 0, len(params)+1)
	for _, p := range params {
		var po []mcp.PropertyOption
		po = append(po, mcp.Description(p.desc))
		if p.required {
			po = append(po, mcp.Required())
		}
		switch p.kind {
		case kindString:
			if p.nonEmpty {
				po = append(po, mcp.MinLength(1))
			}
			if p.maxBytes > 0 {
				po = append(po, mcp.MaxLength(p.maxBytes))
			}
			if len(p.enum) > 0 {
				po = append(po, mcp.Enum(p.enum...))
			}
			opts = append(opts, mcp.WithString(p.name, po...))
		case kindInteger:
			po = append(po, mcp.Min(float64(p.min)))
			if p.max > 0 {
				po = append(po, mcp.Max(float64(p.max)))
			}
			opts = append(opts, mcp.WithInteger(p.name, po...))
		case kindStrings, kindEdges:
			opts = append(opts, mcp.WithArray(p.name, append(po, listSchema(p)...)...))
		case kindBool:
			opts = append(opts, mcp.WithBoolean(p.name, po...))
		}
	}
	opts = append(opts, mcp.WithSchemaAdditionalProperties(false))
	return opts
}

// args holds parsed arguments: strings as string, integers as uint64 or
// int64 per the param's range. An argument absent or null is not present.
type args map[string]any

func (a args) has(name string) bool { _, ok := a[name]; return ok }

func (a args) str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a args) strPtr(name string) *string {
	s, ok := a[name].(string)
	if !ok {
		return nil
	}
	return &s
}

func (a args) uint(name string) uint64 {
	n, _ := a[name].(uint64)
	return n
}

// parseArgs reads the call's arguments strictly against params: they must
// be a JSON object; an unknown name, a wrong type, a missing required
// argument, an empty required string, a string over its byte limit, a
// value outside its enum or range is refused invalid_argument with a
// sentence naming the argument and what to do. It does its own checks
// rather than lean on mcp-go's schema validation, whose messages read
// badly and which is off by default.
func parseArgs(req mcp.CallToolRequest, params []param) (args, *engine.Refusal) {
	raw, err := rawArguments(req)
	if err != nil {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "The arguments could not be read as JSON. Pass the arguments as a JSON object.")
	}
	fields := map[string]json.RawMessage{}
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) > 0 && !bytes.Equal(trimmed, []byte("null")) {
		if trimmed[0] != '{' {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "The arguments must be a JSON object of named arguments (%s).", names(params))
		}
		if err := json.Unmarshal(trimmed, &fields); err != nil {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "The arguments must be a JSON object of named arguments (%s).", names(params))
		}
	}

	var unknown []string
	for name := range fields {
		if !slices.ContainsFunc(params, func(p param) bool { return p.name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if len(params) == 0 {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Unknown argument %s: this tool takes no arguments. Call it with none.", quote(unknown[0]))
		}
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Unknown argument %s. This tool takes %s; remove %s and call again.", quote(unknown[0]), names(params), quote(unknown[0]))
	}

	out := args{}
	for _, p := range params {
		v, ok := fields[p.name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if p.required {
				return nil, engine.Refuse(engine.CodeInvalidArgument, "Missing required argument %q: %s Pass it and call again.", p.name, p.desc)
			}
			continue
		}
		val, r := parseValue(p, v)
		if r != nil {
			return nil, r
		}
		out[p.name] = val
	}
	return out, nil
}

func parseValue(p param, v json.RawMessage) (any, *engine.Refusal) {
	switch p.kind {
	case kindString:
		if jsonType(v) != "a string" {
			return nil, wrongType(p, v)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, wrongType(p, v)
		}
		if r := checkText(p, v, s); r != nil {
			return nil, r
		}
		if p.nonEmpty && strings.TrimSpace(s) == "" {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q must not be empty: %s", p.name, p.desc)
		}
		if len(p.enum) > 0 && !slices.Contains(p.enum, s) {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be one of %s.", p.name, quote(s), strings.Join(p.enum, ", "))
		}
		return s, nil
	case kindInteger:
		// json.Number would take the string "5" too; only a JSON number is.
		if jsonType(v) != "a number" {
			return nil, wrongType(p, v)
		}
		var num json.Number
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&num); err != nil {
			return nil, wrongType(p, v)
		}
		n, err := strconv.ParseUint(num.String(), 10, 64)
		if err != nil {
			// 5.0 is an integer a JSON encoder may well produce; 5.5 is not.
			f, ferr := strconv.ParseFloat(num.String(), 64)
			if ferr != nil || f != math.Trunc(f) || f < 0 || f > float64(math.MaxInt64) {
				return nil, outOfRange(p, num.String())
			}
			n = uint64(f)
		}
		if n < uint64(p.min) || (p.max > 0 && n > uint64(p.max)) {
			return nil, outOfRange(p, num.String())
		}
		return n, nil
	case kindStrings, kindEdges:
		return parseList(p, v)
	case kindBool:
		return parseBool(p, v)
	}
	return nil, engine.Refuse(engine.CodeInternal, "%s", engine.Codes[engine.CodeInternal].Doc)
}

func wrongType(p param, v json.RawMessage) *engine.Refusal {
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q must be %s, not %s: %s", p.name, p.kind, jsonType(v), p.desc)
}

func outOfRange(p param, got string) *engine.Refusal {
	if p.max > 0 {
		return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a whole number from %d to %d.", p.name, got, p.min, p.max)
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a whole number of at least %d.", p.name, got, p.min)
}

// jsonType names the JSON type of a raw value for a refusal sentence.
func jsonType(v json.RawMessage) string {
	t := bytes.TrimSpace(v)
	if len(t) == 0 {
		return "empty"
	}
	switch t[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

func names(params []param) string {
	quoted := make([]string, len(params))
	for i, p := range params {
		quoted[i] = strconv.Quote(p.name)
	}
	return strings.Join(quoted, ", ")
}

// rawArguments returns the call's arguments as JSON bytes: the bytes off
// the wire where mcp-go kept them (no precision lost above 2^53), else the
// in-process value marshalled.
func rawArguments(req mcp.CallToolRequest) (json.RawMessage, error) {
	switch v := req.GetRawArguments().(type) {
	case json.RawMessage:
		return v, nil
	case []byte:
		return v, nil
	case nil:
		return nil, nil
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("marshal arguments: %w", err)
		}
		return b, nil
	}
}
