package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// writeRun runs one write tool's call: it returns the answer's write
// header (for the op_id a refusal names) and the answer, its message
// explained (Deps.explain).
type writeRun func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error)

// writeHandler is the shape every write tool's handler shares: parse the
// arguments strictly, check them (check may be nil), derive this
// surface's write options, run the write, and answer its result, or its
// refusal carrying the op_id to come back with. A gesture's answer (a
// tracker.ItemWrite, several records in order) is answered with its steps
// (gestureAnswer, gestureFailed).
func (d Deps) writeHandler(name string, params []param, check func(args) *engine.Refusal, run writeRun) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil && check != nil {
			r = check(a)
		}
		if r != nil {
			return Refused(r), nil
		}
		w, err := d.writeOptions(ctx, name, a)
		if err != nil {
			return Failed(ctx, d.logger(), name, "", err), nil
		}
		ctx = engine.WithActor(ctx, d.actor(ctx))
		head, res, err := run(ctx, w, a)
		if g, ok := res.(tracker.ItemWrite); ok {
			// A gesture: several records in order, answered with its steps.
			if err != nil {
				return d.gestureFailed(ctx, name, g, w, err), nil
			}
			return d.gestureAnswer(g), nil
		}
		if err != nil {
			return Failed(ctx, d.logger(), name, opOf(head, w), err), nil
		}
		return Answer(res), nil
	}
}

// readRun runs one read tool's call with the arguments it parsed: the
// answer, or the error to answer.
type readRun func(ctx context.Context, a args) (any, error)

// readHandler is the shape every read tool's handler shares: parse the
// arguments strictly, check them (check may be nil), run the read, and
// answer its result or its refusal.
func (d Deps) readHandler(name string, params []param, check func(args) *engine.Refusal, run readRun) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		a, r := parseArgs(req, params)
		if r == nil && check != nil {
			r = check(a)
		}
		if r != nil {
			return Refused(r), nil
		}
		res, err := run(ctx, a)
		if err != nil {
			return Failed(ctx, d.logger(), name, "", err), nil
		}
		return Answer(res), nil
	}
}
