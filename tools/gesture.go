package tools

import (
	"context"
	"fmt"
	"strings"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// maxShownSteps is how many steps a text rendering lists before it elides
// the middle; the structured answer always has them all.
const maxShownSteps = 12

// itemSubject names a write's item in its text: its key and version when
// the answer carries it, else fallback.
func itemSubject(fallback string, res tracker.ItemWrite) string {
	if res.Item != nil {
		return fmt.Sprintf("%s (version %d)", res.Item.Key, res.Item.Version)
	}
	return fallback
}

// gestureAnswer renders a write that may be several records in order: the
// outcome line, then its steps and the one-sided mirrors. On the seat
// surface a walk that stopped (unknown, or pending behind a step this node
// has not applied) says to repeat the call, not to bring an op_id back: a
// seat's ids derive from its turn.
func (d Deps) gestureAnswer(subject string, res tracker.ItemWrite) *mcp.CallToolResult {
	if d.Surface == Seat && len(res.Steps) > 0 {
		last := res.Steps[len(res.Steps)-1]
		switch res.Outcome {
		case engine.Unknown:
			res.Message = fmt.Sprintf("Step %s of %s is unknown, so the walk stopped there and nothing after it was written. Repeat exactly the same call: the steps that landed are answered, the rest are finished.", last.Action, last.Task)
		case engine.Pending:
			// The walk stopped behind a step this node has not applied.
			res.Message = fmt.Sprintf("Step %s of %s is durable but not yet applied on this node, so the walk stopped before the steps that depend on it. Do not retry at once: once this node has caught up, repeat exactly the same call to finish the rest.", last.Action, last.Task)
		}
	}
	return Answer(res, writeText(subject, res.WriteResult)+stepsText(res.Steps)+oneSidedText(res.OneSided))
}

// gestureFailed renders a refused or failed gesture. When steps landed
// before it stopped, the answer names the gesture's op_id (or, on the seat
// surface, says to repeat the call) so running it again finishes the walk
// rather than starting another, and lists the steps.
func (d Deps) gestureFailed(ctx context.Context, tool string, res tracker.ItemWrite, w engine.WriteOptions, err error) *mcp.CallToolResult {
	out := Failed(ctx, d.logger(), tool, opOf(res.WriteResult, w), err)
	landed := 0
	for _, s := range res.Steps {
		if s.Outcome == engine.Applied || s.Outcome == engine.Pending {
			landed++
		}
	}
	obj, ok := out.StructuredContent.(map[string]any)
	if landed == 0 || !ok || res.OpID == "" {
		return out
	}
	again := fmt.Sprintf("call again with op_id %s and the same arguments", res.OpID)
	if d.Surface == Seat {
		again = "repeat exactly the same call"
	} else {
		obj["op_id"] = res.OpID
	}
	msg, _ := obj["message"].(string)
	msg += fmt.Sprintf(" %d of the gesture's steps landed before it stopped (see steps); once that is dealt with, %s to finish it.", landed, again)
	obj["message"], obj["steps"] = msg, res.Steps
	out.Content = []mcp.Content{mcp.NewTextContent(msg + stepsText(res.Steps))}
	return out
}

// stepsText lists a walk's steps, one line each, eliding the middle of a
// long walk.
func stepsText(steps []tracker.Step) string {
	if len(steps) == 0 {
		return ""
	}
	count := map[string]int{}
	for _, s := range steps {
		count[stepOutcome(s)]++
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%d steps:", len(steps))
	for _, o := range []string{"applied", "pending", "unknown", "not written"} {
		if count[o] > 0 {
			fmt.Fprintf(&b, " %d %s", count[o], o)
		}
	}
	for i, s := range steps {
		if len(steps) > maxShownSteps && i == maxShownSteps/2 {
			fmt.Fprintf(&b, "\n  … %d more …", len(steps)-maxShownSteps)
		}
		if len(steps) > maxShownSteps && i >= maxShownSteps/2 && i < len(steps)-maxShownSteps/2 {
			continue
		}
		fmt.Fprintf(&b, "\n  %s %s: %s", s.Action, s.Task, stepOutcome(s))
		if s.Outcome == engine.Unknown {
			fmt.Fprintf(&b, " (op %s)", s.OpID)
		}
	}
	return b.String()
}

func stepOutcome(s tracker.Step) string {
	if s.Outcome == "" {
		return "not written"
	}
	return string(s.Outcome)
}

func oneSidedText(keys []string) string {
	if len(keys) == 0 {
		return ""
	}
	return "\none-sided (the mirror edge on these items is unknown; running the write again writes it): " + strings.Join(keys, ", ")
}
