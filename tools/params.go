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

// Kind is the JSON type an argument must have.
type Kind int

const (
	KindString Kind = iota
	KindInteger
	// KindStrings and kindEdges are lists (params_list.go).
	KindStrings
	KindEdges
	// KindNumber and kindBool are params_scalar.go's; kindObjects (a
	// list of objects whose fields are params) and kindObject are
	// params_more.go's.
	KindNumber
	KindBool
	KindObjects
	KindObject
	// KindCustom is a type the toolset declares itself (Param.Custom).
	KindCustom
)

func (k Kind) String() string {
	switch k {
	case KindInteger:
		return "an integer"
	case KindStrings:
		return "an array of strings"
	case KindNumber:
		return "a number"
	case KindBool:
		return "a boolean"
	case KindObjects:
		return "an array of objects"
	case KindObject:
		return "an object"
	}
	return "a string"
}

// Param declares one argument once: the input schema and the parser are
// both built from it, so they cannot disagree.
type Param struct {
	Name     string
	Kind     Kind
	Required bool
	Desc     string
	// Strings: MaxBytes bounds the UTF-8 length and every string has one
	// (TestEveryLimitIsRefused; the parser enforces it, the schema does
	// not state it: see schemaOptions); NonEmpty refuses ""; Enum
	// restricts the value; Long marks text that may span lines
	// (descriptions, bodies, comments), where line breaks and tabs are
	// allowed. Every string is checked in one place (checkText).
	MaxBytes int
	NonEmpty bool
	Enum     []string
	Long     bool
	// Integers: the inclusive range.
	Min, Max int64
	// Lists: MaxItems bounds the length; MaxBytes, NonEmpty and Enum
	// apply to each string, and Each, when set, checks each string (a
	// work item key).
	MaxItems int
	Each     func(name, value string) *engine.Refusal
	// Fields are the fields of each object of a KindObjects list.
	Fields []Param
	// Custom is a KindCustom argument's type.
	Custom *Custom
}

// Custom is an argument type a toolset declares itself (the tracker's
// edges): how refusals name it, its schema and its parser.
type Custom struct {
	Type   string // as a refusal names it: "an array of {kind, key} objects"
	Schema func(p Param, po []mcp.PropertyOption) mcp.ToolOption
	Parse  func(p Param, v json.RawMessage) (any, *engine.Refusal)
}

// schemaOptions turns params into mcp-go tool options: each argument's
// name, JSON type, description, enum, whether it is required, and an
// integer's range where it is not simply "a whole number" (a minimum above
// 0, a maximum). That is what a model needs to make a call; the rest is
// the parser's to enforce, not the catalogue's to spend tokens on (the seat
// catalogue has a 5 000-token budget, TestSeatCatalogue):
//   - string byte limits (maxBytes) and non-empty checks are not stated as
//     maxLength/minLength: the limits are far above what the descriptions
//     invite (a title of 512 bytes, a body of 64 KiB), the ones a model
//     chooses a value against (project and space keys) are in the
//     description, and a value over a limit is refused invalid_argument
//     with a sentence naming the limit (TestEveryLimitIsRefused);
//   - no additionalProperties:false: an unknown argument is refused with a
//     sentence naming the arguments the tool takes (parseArgs);
//   - no maxItems: a list over its length is refused with a sentence
//     saying to split the change (parseList).
func schemaOptions(params []Param) []mcp.ToolOption {
	opts := make([]mcp.ToolOption, 0, len(params))
	for _, p := range params {
		var po []mcp.PropertyOption
		if p.Desc != "" { // an object's fields may go without
			po = append(po, mcp.Description(p.Desc))
		}
		if p.Required {
			po = append(po, mcp.Required())
		}
		switch p.Kind {
		case KindString:
			if len(p.Enum) > 0 {
				po = append(po, mcp.Enum(p.Enum...))
			}
			opts = append(opts, mcp.WithString(p.Name, po...))
		case KindInteger:
			if p.Min > 0 {
				po = append(po, mcp.Min(float64(p.Min)))
			}
			if p.Max > 0 {
				po = append(po, mcp.Max(float64(p.Max)))
			}
			opts = append(opts, mcp.WithInteger(p.Name, po...))
		case KindStrings:
			opts = append(opts, mcp.WithArray(p.Name, append(po, listSchema(p)...)...))
		case KindCustom:
			opts = append(opts, p.Custom.Schema(p, po))
		case KindNumber, KindBool:
			opts = append(opts, scalarSchema(p, po))
		case KindObjects, KindObject:
			opts = append(opts, moreSchema(p, po))
		}
	}
	return opts
}

// Args holds parsed arguments: strings as string, integers as uint64 or
// int64 per the param's range. An argument absent or null is not present.
type Args map[string]any

func (a Args) Has(name string) bool { _, ok := a[name]; return ok }

func (a Args) Str(name string) string {
	s, _ := a[name].(string)
	return s
}

func (a Args) StrPtr(name string) *string {
	s, ok := a[name].(string)
	if !ok {
		return nil
	}
	return &s
}

func (a Args) Uint(name string) uint64 {
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
func parseArgs(req mcp.CallToolRequest, params []Param) (Args, *engine.Refusal) {
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
		if !slices.ContainsFunc(params, func(p Param) bool { return p.Name == name }) {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		if len(params) == 0 {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Unknown argument %s: this tool takes no arguments. Call it with none.", Quote(unknown[0]))
		}
		return nil, engine.Refuse(engine.CodeInvalidArgument, "Unknown argument %s. This tool takes %s; remove %s and call again.", Quote(unknown[0]), names(params), Quote(unknown[0]))
	}

	out := Args{}
	for _, p := range params {
		v, ok := fields[p.Name]
		if !ok || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
			if p.Required {
				return nil, engine.Refuse(engine.CodeInvalidArgument, "Missing required argument %q: %s Pass it and call again.", p.Name, p.Desc)
			}
			continue
		}
		val, r := parseValue(p, v)
		if r != nil {
			return nil, r
		}
		out[p.Name] = val
	}
	return out, nil
}

func parseValue(p Param, v json.RawMessage) (any, *engine.Refusal) {
	switch p.Kind {
	case KindString:
		if JSONType(v) != "a string" {
			return nil, WrongType(p, v)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil {
			return nil, WrongType(p, v)
		}
		if r := checkText(p, v, s); r != nil {
			return nil, r
		}
		if p.NonEmpty && strings.TrimSpace(s) == "" {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q must not be empty: %s", p.Name, p.Desc)
		}
		if len(p.Enum) > 0 && !slices.Contains(p.Enum, s) {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be one of %s.", p.Name, Quote(s), strings.Join(p.Enum, ", "))
		}
		return s, nil
	case KindInteger:
		// json.Number would take the string "5" too; only a JSON number is.
		if JSONType(v) != "a number" {
			return nil, WrongType(p, v)
		}
		var num json.Number
		dec := json.NewDecoder(bytes.NewReader(v))
		dec.UseNumber()
		if err := dec.Decode(&num); err != nil {
			return nil, WrongType(p, v)
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
		if n < uint64(p.Min) || (p.Max > 0 && n > uint64(p.Max)) {
			return nil, outOfRange(p, num.String())
		}
		return n, nil
	case KindStrings:
		return parseList(p, v)
	case KindCustom:
		return p.Custom.Parse(p, v)
	case KindNumber, KindBool:
		return parseScalar(p, v)
	case KindObjects, KindObject:
		return parseMore(p, v)
	}
	return nil, engine.Refuse(engine.CodeInternal, "%s", engine.Codes[engine.CodeInternal].Doc)
}

// WrongType refuses an argument that is not of p's JSON type.
func WrongType(p Param, v json.RawMessage) *engine.Refusal {
	typ := p.Kind.String()
	if p.Custom != nil {
		typ = p.Custom.Type
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q must be %s, not %s: %s", p.Name, typ, JSONType(v), p.Desc)
}

func outOfRange(p Param, got string) *engine.Refusal {
	if p.Max > 0 {
		return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a whole number from %d to %d.", p.Name, got, p.Min, p.Max)
	}
	return engine.Refuse(engine.CodeInvalidArgument, "Argument %q is %s; it must be a whole number of at least %d.", p.Name, got, p.Min)
}

// JSONType names the JSON type of a raw value for a refusal sentence.
func JSONType(v json.RawMessage) string {
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

func names(params []Param) string {
	quoted := make([]string, len(params))
	for i, p := range params {
		quoted[i] = strconv.Quote(p.Name)
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
