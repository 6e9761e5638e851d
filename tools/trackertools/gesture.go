package trackertools

import (
	"context"
	"fmt"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// gesture is a gesture's answer, several records in order, as the kit's
// write handler answers it (tools.Walk).
type gesture struct{ tracker.ItemWrite }

// writeHandler is the kit's write handler, a gesture's answer (a
// tracker.ItemWrite) answered with its steps.
func (d env) writeHandler(name string, params []tools.Param, check func(tools.Args) *engine.Refusal, run tools.WriteRun) server.ToolHandlerFunc {
	return d.WriteHandler(name, params, check, func(ctx context.Context, w engine.WriteOptions, a tools.Args) (engine.WriteResult, any, error) {
		head, res, err := run(ctx, w, a)
		if g, ok := res.(tracker.ItemWrite); ok {
			return head, gesture{g}, err
		}
		return head, res, err
	})
}

// Answer answers a write that may be several records in order:
// the outcome, its steps and the one-sided mirrors. On the seat
// surface a walk that stopped (unknown, or pending behind a step this node
// has not applied) says to repeat the call, not to bring an op_id back: a
// seat's ids derive from its turn.
func (g gesture) Answer(d tools.Deps) *mcp.CallToolResult {
	res := g.ItemWrite
	if d.Surface == tools.Seat && len(res.Steps) > 0 {
		last := res.Steps[len(res.Steps)-1]
		switch res.Outcome {
		case engine.Unknown:
			res.Message = fmt.Sprintf("Step %s of %s is unknown, so the walk stopped there and nothing after it was written. Repeat exactly the same call: the steps that landed are answered, the rest are finished.", last.Action, last.Task)
		case engine.Pending:
			// The walk stopped behind a step this node has not applied.
			res.Message = fmt.Sprintf("Step %s of %s is durable but not yet applied on this node, so the walk stopped before the steps that depend on it. Do not retry at once: once this node has caught up, repeat exactly the same call to finish the rest.", last.Action, last.Task)
		}
	}
	d.Explain(&res.WriteResult)
	return tools.Answer(res)
}

// Failed renders a refused or failed gesture. When steps landed
// before it stopped, the answer names the gesture's op_id (or, on the seat
// surface, says to repeat the call) so running it again finishes the walk
// rather than starting another, and lists the steps.
func (g gesture) Failed(ctx context.Context, d tools.Deps, tool string, w engine.WriteOptions, err error) *mcp.CallToolResult {
	res := g.ItemWrite
	obj := tools.FailedObject(ctx, d.Log(), tool, tools.OpOf(res.WriteResult, w), err)
	landed := 0
	for _, s := range res.Steps {
		if s.Outcome == engine.Applied || s.Outcome == engine.Pending {
			landed++
		}
	}
	if landed == 0 || res.OpID == "" {
		return tools.RefusedObject(obj)
	}
	again := fmt.Sprintf("call again with op_id %s and the same arguments", res.OpID)
	if d.Surface == tools.Seat {
		again = "repeat exactly the same call"
	} else {
		obj["op_id"] = res.OpID
	}
	msg, _ := obj["message"].(string)
	msg += fmt.Sprintf(" %d of the gesture's steps landed before it stopped (see steps); once that is dealt with, %s to finish it.", landed, again)
	obj["message"], obj["steps"] = msg, res.Steps
	return tools.RefusedObject(obj)
}
