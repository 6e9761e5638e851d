package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// MetaSpend is the _meta key a caller reports what a call's turn spent
// under: one object or a list of them, one a model, each
// {"model": "...", "input_tokens": n, "output_tokens": n, "cost_usd": x}
// (every field but model optional, none negative). It reports the spend
// since the caller's previous report, so the usage domain adds each up
// by seat, day and model. A malformed one refuses the call
// invalid_argument before anything runs.
const MetaSpend = "crewlet/spend"

// Spend limits: a report names at most maxSpendModels models, each name
// at most maxModelBytes.
const (
	maxSpendModels = 16
	maxModelBytes  = 128
	maxTokens      = 1e12
	maxCostUSD     = 1e6
)

// Spend is one model's spend as a caller reported it.
type Spend struct {
	Model        string
	InputTokens  int64
	OutputTokens int64
	// CostMicros is the cost in millionths of a US dollar.
	CostMicros int64
}

// Served is one tool call as its surface served it, handed to the
// catalogue's observers (Toolset.Observe) once it is answered.
type Served struct {
	Tool    string
	Surface Surface
	// Seat and Unit are the seat call's Crewlet-Seat and Crewlet-Unit,
	// "" on every other surface.
	Seat, Unit string
	// Outcome is applied, pending or unknown for a write, answered for a
	// read, refused (Code says why) or error.
	Outcome string
	Code    string
	Took    time.Duration
	Spend   []Spend
}

// observers are the catalogue's toolsets' observers of served calls.
func (c Catalogue) observers() []func(context.Context, Served) {
	var out []func(context.Context, Served)
	for _, ts := range c {
		if ts.Observe != nil {
			out = append(out, ts.Observe)
		}
	}
	return out
}

// served wraps h so every observer sees each call it answers; a call
// whose _meta spend report is malformed is refused before it runs.
func (d Deps) served(name string, h server.ToolHandlerFunc, obs []func(context.Context, Served)) server.ToolHandlerFunc {
	if len(obs) == 0 {
		return h
	}
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		t0 := time.Now()
		spend, ref := spendOf(req.Params.Meta)
		var res *mcp.CallToolResult
		var err error
		if ref != nil {
			res = Refused(ref)
		} else {
			res, err = h(ctx, req)
		}
		s := Served{Tool: name, Surface: d.Surface, Took: time.Since(t0), Spend: spend}
		if d.Surface == Seat {
			if t, ok := TurnFrom(ctx); ok {
				s.Seat, s.Unit = t.Seat, t.Unit
			}
		}
		s.Outcome, s.Code = outcomeOf(res, err)
		for _, o := range obs {
			o(ctx, s)
		}
		return res, err
	}
}

// outcomeOf is how a call ended: its refusal code, a write's outcome, or
// answered.
func outcomeOf(res *mcp.CallToolResult, err error) (string, string) {
	if code := refusalCode(res, err); code != "" {
		if code == "internal" {
			return "error", code
		}
		return "refused", code
	}
	// Every answer's structured content is its own bytes (Answer): the
	// one key is read from them without decoding the answer (a Marshal
	// and an Unmarshal of every answer were a tenth of a get_work_item's
	// CPU over MCP).
	if raw, ok := structuredBytes(res); ok {
		if o := topLevelString(raw, "outcome"); o != "" {
			return o, ""
		}
	}
	return "answered", ""
}

// structuredBytes is res's structured content as the bytes Answer made
// it, false where it has none.
func structuredBytes(res *mcp.CallToolResult) (json.RawMessage, bool) {
	if res == nil {
		return nil, false
	}
	raw, ok := res.StructuredContent.(json.RawMessage)
	return raw, ok
}

// topLevelString is the value of key in the JSON object b where it is a
// string at the object's top level (not inside a nested value), "" where
// it is not there or not a plain string. b is an Answer's bytes, valid
// JSON.
func topLevelString(b []byte, key string) string {
	depth := 0
	keyNext := false // the next string at depth 1 is a key
	for i := 0; i < len(b); i++ {
		switch b[i] {
		case '{':
			depth++
			keyNext = depth == 1
		case '[':
			depth++
		case '}', ']':
			depth--
		case ',':
			keyNext = depth == 1
		case '"':
			end := stringEnd(b, i)
			if end < 0 {
				return ""
			}
			if keyNext && string(b[i+1:end]) == key {
				j := end + 1
				for j < len(b) && (b[j] == ':' || b[j] == ' ') {
					j++
				}
				if j >= len(b) || b[j] != '"' {
					return ""
				}
				vend := stringEnd(b, j)
				if vend < 0 || bytes.IndexByte(b[j+1:vend], '\\') >= 0 {
					return ""
				}
				return string(b[j+1 : vend])
			}
			keyNext = false
			i = end
		}
	}
	return ""
}

// stringEnd is the index of the quote closing the JSON string opening at
// b[start], -1 where it does not close.
func stringEnd(b []byte, start int) int {
	for j := start + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j
		}
	}
	return -1
}

// spendOf reads a call's _meta spend report (MetaSpend): nil where it
// sends none, a refusal where it is malformed.
func spendOf(m *mcp.Meta) ([]Spend, *engine.Refusal) {
	if m == nil || m.AdditionalFields == nil {
		return nil, nil
	}
	raw, ok := m.AdditionalFields[MetaSpend]
	if !ok || raw == nil {
		return nil, nil
	}
	var list []any
	switch v := raw.(type) {
	case []any:
		list = v
	case map[string]any:
		list = []any{v}
	default:
		return nil, spendRefusal("it is a %T, not an object or a list of objects", raw)
	}
	if len(list) > maxSpendModels {
		return nil, spendRefusal("it names %d models; at most %d", len(list), maxSpendModels)
	}
	out := make([]Spend, 0, len(list))
	for i, e := range list {
		obj, ok := e.(map[string]any)
		if !ok {
			return nil, spendRefusal("entry %d is a %T, not an object", i, e)
		}
		s, ref := spendEntry(i, obj)
		if ref != nil {
			return nil, ref
		}
		out = append(out, s)
	}
	return out, nil
}

func spendEntry(i int, obj map[string]any) (Spend, *engine.Refusal) {
	var s Spend
	for k, v := range obj {
		switch k {
		case "model":
			m, ok := v.(string)
			if !ok || m == "" || len(m) > maxModelBytes || !utf8.ValidString(m) || strings.ContainsAny(m, "\x00\r\n\t") {
				return s, spendRefusal("entry %d's model must be a non-empty name of at most %d bytes", i, maxModelBytes)
			}
			s.Model = m
		case "input_tokens", "output_tokens":
			f, ok := v.(float64)
			if !ok || f < 0 || f > maxTokens || f != math.Trunc(f) {
				return s, spendRefusal("entry %d's %s must be a whole number from 0 to %g", i, k, float64(maxTokens))
			}
			if k == "input_tokens" {
				s.InputTokens = int64(f)
			} else {
				s.OutputTokens = int64(f)
			}
		case "cost_usd":
			f, ok := v.(float64)
			if !ok || f < 0 || f > maxCostUSD || math.IsNaN(f) {
				return s, spendRefusal("entry %d's cost_usd must be a number of US dollars from 0 to %g", i, float64(maxCostUSD))
			}
			s.CostMicros = int64(math.Round(f * 1e6))
		default:
			return s, spendRefusal("entry %d has %q; an entry takes model, input_tokens, output_tokens and cost_usd", i, k)
		}
	}
	if s.Model == "" {
		return s, spendRefusal("entry %d names no model", i)
	}
	return s, nil
}

func spendRefusal(format string, args ...any) *engine.Refusal {
	why := fmt.Sprintf(format, args...)
	return engine.Refuse(engine.CodeInvalidArgument, "_meta %q is malformed: %s. Send {\"model\": \"…\", \"input_tokens\": n, \"output_tokens\": n, \"cost_usd\": x}, or a list of them, one a model; nothing was run.", MetaSpend, why).With("key", "_meta."+MetaSpend)
}
