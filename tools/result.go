package tools

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
)

// Answer is a successful tool result: the answer struct as structured
// content (a JSON object) and a short text rendering for clients that show
// only text.
func Answer(structured any, text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(text)},
		StructuredContent: structured,
	}
}

// Refused is a refusal as a tool result: isError true, the refusal object
// ({"refused": code, "message": ..., "retry_after_seconds"?, ...}) as
// structured content and its message as text. A refusal is a result, never
// a JSON-RPC error, so the model sees it and can act on it. The message is
// the one for a caller who cannot choose a read level: no MCP surface
// takes one.
func Refused(r *engine.Refusal) *mcp.CallToolResult {
	r = r.ForFixedLevel()
	return &mcp.CallToolResult{
		Content:           []mcp.Content{mcp.NewTextContent(r.Message)},
		StructuredContent: r.Object(),
		IsError:           true,
	}
}

// Internal is the answer to anything that is not a refusal: the code
// internal with the table's generic sentence. The detail goes to the log
// only, never to the caller.
func Internal() *mcp.CallToolResult {
	return Refused(engine.RefuseDoc(engine.CodeInternal))
}

// Failed renders an error from the service: a refusal as itself, any other
// error logged (with the tool and, where known, the operation id) and
// answered internal. A write refused with a code worth coming back for
// (conflict, no_quorum, ...) also carries the op_id it ran under, so the
// caller can repeat that very operation.
func Failed(ctx context.Context, logger *slog.Logger, tool, opID string, err error) *mcp.CallToolResult {
	if r, ok := engine.AsRefusal(err); ok {
		r = r.ForFixedLevel()
		res := Refused(r)
		if opID != "" && engine.Codes[r.Code].Retryable {
			obj := r.Object()
			if _, taken := obj["op_id"]; !taken {
				obj["op_id"] = opID
			}
			res.StructuredContent = obj
		}
		return res
	}
	attrs := []any{slog.String("tool", tool), slog.String(engine.LogErr, err.Error())}
	if opID != "" {
		attrs = append(attrs, slog.String(engine.LogOpID, opID))
	}
	logger.ErrorContext(ctx, "tool_internal_error", attrs...)
	return Internal()
}

// writeText renders a write answer in one line. subject names the object
// ("ENG-8", "project ENG"). pending and unknown say what to do, the same
// words on every surface: the engine's message where it gives one.
func writeText(subject string, w engine.WriteResult) string {
	switch w.Outcome {
	case engine.Applied:
		return fmt.Sprintf("applied %s at %s (op %s)", subject, w.Position, w.OpID)
	case engine.Pending:
		msg := w.Message
		if msg == "" {
			msg = "durable in the log but not yet applied on this node; do not retry, it applies on its own"
			if w.Lag != nil {
				msg += fmt.Sprintf(" (this node is %d records behind)", w.Lag.Seq)
			}
		}
		return fmt.Sprintf("pending %s at %s (op %s): %s", subject, w.Position, w.OpID, msg)
	case engine.Unknown:
		msg := w.Message
		if msg == "" {
			msg = fmt.Sprintf("the write may or may not have landed; retry with op_id %q to finish it without doing it twice", w.OpID)
		}
		return fmt.Sprintf("unknown %s (op %s): %s", subject, w.OpID, msg)
	}
	return fmt.Sprintf("%s %s (op %s)", w.Outcome, subject, w.OpID)
}

// readHead renders what a read answer stands on: level, position, lag and
// completeness.
func readHead(r engine.ReadInfo) string {
	var b strings.Builder
	fmt.Fprintf(&b, "read at %s through %s", r.Level, r.SeenThrough.Token())
	if r.Lag != nil && r.Lag.Seq > 0 {
		fmt.Fprintf(&b, ", %d records behind", r.Lag.Seq)
	}
	if !r.Complete {
		if r.Incomplete != nil {
			fmt.Fprintf(&b, "; incomplete: %d records retained but not applied could change this answer", r.Incomplete.Records)
		} else {
			b.WriteString("; incomplete")
		}
	}
	if r.Note != "" {
		b.WriteString("; ")
		b.WriteString(r.Note)
	}
	return b.String()
}
