package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// writeRun runs one write tool's call: it returns the answer's write
// header (for the op_id a refusal names) and the answer, its message
// explained (Deps.explain).
type writeRun func(ctx context.Context, w engine.WriteOptions, a args) (engine.WriteResult, any, error)

// writeHandler is the shape every write tool's handler shares: parse the
// arguments strictly, check them (check may be nil), derive this
// surface's write options, run the write, and answer its result, or its
// refusal carrying the op_id to come back with.
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
		head, res, err := run(ctx, w, a)
		if err != nil {
			return Failed(ctx, d.logger(), name, opOf(head, w), err), nil
		}
		return Answer(res), nil
	}
}
