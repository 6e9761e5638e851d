package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// The wire form of tool results lives here and nowhere else.
//
// A success is the answer object twice: as structured content, which
// validates against the tool's output schema, and as the text content,
// that same object as JSON. Hosts that hand the model only the text must
// not lose what a one-line summary would drop (descriptions, comments,
// tags, edges, the pending and unknown sentences).
//
// A refusal is isError true with no structured content and one text
// content: the refusal object ({"refused": code, "message": ...,
// "retry_after_seconds"?, "op_id"?, ...}) as JSON. The refusal object does
// not match any tool's output schema, and the official TypeScript SDK 1.x
// client validates structured content even on an error result, throwing
// -32602 before the model ever sees the code; an error result without
// structured content is accepted by every official SDK (TypeScript 1.x and
// 2.x, Python), and the code stays readable as JSON. RefusalOf reads it
// back.

// Answer is a successful tool result: structured is the answer object
// (structured content) and its JSON is the text content.
func Answer(structured any) *mcp.CallToolResult {
	b, err := marshal(structured)
	if err != nil {
		// An answer struct that cannot be JSON is a bug, not the caller's
		// doing: answer internal rather than half an answer.
		return Internal()
	}
	// The structured content is the text's bytes: mcp-go would otherwise
	// encode the answer a second time for every result it sends (a
	// tenth of a read's MCP cost), and the client decodes the same object
	// either way.
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(string(b))},
		StructuredContent: json.RawMessage(b),
	}
}

// Refused is a refusal as a tool result. A refusal is a result, never a
// JSON-RPC error, so the model sees it and can act on it.
//
// The message is the one for a caller who cannot choose a read level: no
// MCP surface takes one.
func Refused(r *engine.Refusal) *mcp.CallToolResult {
	return RefusedObject(r.ForFixedLevel().Object())
}

// RefusedObject is the result of a refusal object, possibly with fields
// added to what the engine gave (op_id, steps).
func RefusedObject(obj map[string]any) *mcp.CallToolResult {
	b, err := marshal(obj)
	if err != nil {
		b = []byte(internalJSON)
	}
	return &mcp.CallToolResult{
		Content: []mcp.Content{mcp.NewTextContent(string(b))},
		IsError: true,
	}
}

// internalJSON is the internal refusal, pre-rendered for the one case
// where a refusal object itself would not marshal.
var internalJSON = func() string {
	b, err := json.Marshal(engine.RefuseDoc(engine.CodeInternal).Object())
	if err != nil {
		return `{"refused":"internal","message":"Something went wrong inside the server."}`
	}
	return string(b)
}()

// RefusalOf reads a refusal back from a tool result: the refusal object
// its text content carries, and true; false for a success, or for an
// error result that is not a Crewlet refusal. Every consumer (the --join
// forwarder, the gestures, the tests) reads refusals through it.
func RefusalOf(res *mcp.CallToolResult) (map[string]any, bool) {
	if res == nil || !res.IsError {
		return nil, false
	}
	for _, c := range res.Content {
		var text string
		switch tc := c.(type) {
		case mcp.TextContent:
			text = tc.Text
		case *mcp.TextContent:
			text = tc.Text
		default:
			continue
		}
		var obj map[string]any
		if json.Unmarshal([]byte(text), &obj) != nil {
			continue
		}
		if code, _ := obj["refused"].(string); code != "" {
			return obj, true
		}
	}
	return nil, false
}

// marshal is JSON without HTML escaping: the text is read by a model, to
// which "\u003c" for "<" is noise.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// Internal is the answer to anything that is not a refusal: the code
// internal with the table's generic sentence. The detail goes to the log
// only, never to the caller.
func Internal() *mcp.CallToolResult {
	return Refused(engine.RefuseDoc(engine.CodeInternal))
}

// Failed renders an error from the service: a refusal as itself, any other
// error logged and answered internal (see failedObject).
func Failed(ctx context.Context, logger *slog.Logger, tool, opID string, err error) *mcp.CallToolResult {
	return RefusedObject(FailedObject(ctx, logger, tool, opID, err))
}

// FailedObject is the refusal object of an error from the service: a
// refusal as itself, any other error logged (with the tool and, where
// known, the operation id) and answered internal. A write refused with a
// code worth coming back for (conflict, no_quorum, ...) also carries the
// op_id it ran under, so the caller can repeat that very operation.
func FailedObject(ctx context.Context, logger *slog.Logger, tool, opID string, err error) map[string]any {
	if r, ok := engine.AsRefusal(err); ok {
		r = r.ForFixedLevel()
		obj := r.Object()
		if opID != "" && engine.Codes[r.Code].Retryable {
			if _, taken := obj["op_id"]; !taken {
				obj["op_id"] = opID
			}
		}
		return obj
	}
	attrs := []any{slog.String("tool", tool), slog.String(engine.LogErr, err.Error())}
	if opID != "" {
		attrs = append(attrs, slog.String(engine.LogOpID, opID))
	}
	logger.ErrorContext(ctx, "tool_internal_error", attrs...)
	return engine.RefuseDoc(engine.CodeInternal).Object()
}

// Explain fills a write answer's message where the service left it
// empty: pending and unknown always say what to do. The engine gives its
// own sentence on every path it knows; this is the floor under a path
// that forgets. A seat brings no op_id (its ids derive from the turn), so
// it is told to repeat the call instead.
func (d Deps) Explain(w *engine.WriteResult) {
	if w.Message != "" {
		return
	}
	switch w.Outcome {
	case engine.Pending:
		w.Message = "Durable in the log but not yet applied on this node. Do not retry: it applies on its own."
		if w.Lag != nil && w.Lag.Seq > 0 {
			w.Message += fmt.Sprintf(" This node is %d records behind.", w.Lag.Seq)
		}
	case engine.Unknown:
		if d.Surface == Seat {
			w.Message = "The write may or may not have landed. Repeat exactly the same call: it finishes the write without doing it twice."
			return
		}
		w.Message = fmt.Sprintf("The write may or may not have landed. Retry with op_id %s and the same arguments to finish it without doing it twice.", w.OpID)
	}
}
