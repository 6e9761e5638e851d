package tools

import (
	"context"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// WriteRun runs one write tool's call: it returns the answer's write
// header (for the op_id a refusal names) and the answer, its message
// explained (Deps.explain).
type WriteRun func(ctx context.Context, w engine.WriteOptions, a Args) (engine.WriteResult, any, error)

// WriteHandler is the shape every write tool's handler shares: parse the
// arguments strictly, check them (check may be nil), derive this
// surface's write options, run the write, and answer its result, or its
// refusal carrying the op_id to come back with. A Walk answers itself.
func (d Deps) WriteHandler(name string, params []Param, check func(Args) *engine.Refusal, run WriteRun) server.ToolHandlerFunc {
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
			return Failed(ctx, d.Log(), name, "", err), nil
		}
		ctx = engine.WithActor(ctx, d.actor(ctx))
		head, res, err := run(ctx, w, a)
		if g, ok := res.(Walk); ok {
			// Several records in order, answered with its steps.
			if err != nil {
				return g.Failed(ctx, d, name, w, err), nil
			}
			return g.Answer(d), nil
		}
		if err != nil {
			return Failed(ctx, d.Log(), name, OpOf(head, w), err), nil
		}
		return Answer(res), nil
	}
}

// Walk is a write answered as several records in order (a tracker
// gesture): it answers itself, with its steps, and words its own failure
// (which steps landed, how to finish it).
type Walk interface {
	Answer(d Deps) *mcp.CallToolResult
	Failed(ctx context.Context, d Deps, tool string, w engine.WriteOptions, err error) *mcp.CallToolResult
}

// ReadRun runs one read tool's call with the arguments it parsed: the
// answer, or the error to answer.
type ReadRun func(ctx context.Context, a Args) (any, error)

// ReadHandler is the shape every read tool's handler shares: parse the
// arguments strictly, check them (check may be nil), run the read, and
// answer its result or its refusal.
func (d Deps) ReadHandler(name string, params []Param, check func(Args) *engine.Refusal, run ReadRun) server.ToolHandlerFunc {
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
			return Failed(ctx, d.Log(), name, "", err), nil
		}
		return Answer(res), nil
	}
}
