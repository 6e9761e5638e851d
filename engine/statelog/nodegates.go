package statelog

import (
	"context"
	"fmt"
	"maps"
	"regexp"

	"github.com/crewlet/crewlet/engine"
)

// NodeGates evicts a node from the fleet and readmits it: one node-gate
// record on every domain's log, each a step of the operation named by
// its domain. On every node the eviction gate (evict.go) then drops every
// record the evicted node publishes after its eviction record, until a
// readmission.
type NodeGates struct {
	Replicas []*Replica
	Clock    engine.Clock
}

// GateStep is one domain's part of a node gate.
type GateStep struct {
	Domain   string         `json:"domain"`
	OpID     string         `json:"op_id"`
	Outcome  engine.Outcome `json:"outcome,omitempty"`
	Position string         `json:"position,omitempty"`
}

// NodeGateWrite answers evict_node and readmit_node.
type NodeGateWrite struct {
	engine.WriteResult
	Node    string     `json:"node"`
	Evicted bool       `json:"evicted"`
	Steps   []GateStep `json:"steps"`
}

var nodeNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// EvictNode evicts node on every log.
func (g *NodeGates) EvictNode(ctx context.Context, w engine.WriteOptions, node string) (NodeGateWrite, error) {
	return g.gate(ctx, w, node, true)
}

// ReadmitNode readmits node on every log.
func (g *NodeGates) ReadmitNode(ctx context.Context, w engine.WriteOptions, node string) (NodeGateWrite, error) {
	return g.gate(ctx, w, node, false)
}

// gate walks every log: a step per domain, named by it, so a re-run
// under the id finishes the rest. Any step that is not applied ends the
// walk (a node gate waits for no pending step).
func (g *NodeGates) gate(ctx context.Context, w engine.WriteOptions, node string, evict bool) (NodeGateWrite, error) {
	if !nodeNameRE.MatchString(node) {
		return NodeGateWrite{}, engine.Refuse(engine.CodeInvalidArgument, "node %q is not a node name (node.name: letters, digits, '.', '_' and '-'); crewlet retention status lists the fleet's nodes.", node)
	}
	verb := "readmit"
	if evict {
		verb = "evict"
	}
	op, err := OpFor(g.Clock.Now(), w, verb, node)
	out := NodeGateWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}, Node: node, Evicted: evict, Steps: []GateStep{}}
	if err != nil {
		return out, err
	}
	wk := NewWalk(op)
	var stepErr error
	for _, r := range g.Replicas {
		domain := string(r.Domain())
		ok, err := wk.Step(ctx, r, verb, domain, domain, func(ctx context.Context, sop Op) (Written, error) {
			return r.gateNode(ctx, sop, node, evict)
		})
		if err != nil || !ok {
			stepErr = err
			break
		}
	}
	for _, st := range wk.Steps {
		out.Steps = append(out.Steps, GateStep{Domain: st.Label, OpID: st.OpID, Outcome: st.Outcome, Position: st.Position})
	}
	out.Outcome, out.Position = wk.Outcome, wk.Position
	stepErr = g.offerAgain(stepErr, op)
	if stop := wk.Stop; stop != nil && stop.Outcome != "" {
		out.Message = fmt.Sprintf("The %s log's step is %s, so the gate stopped there. Call again with op_id %s and the same arguments: the steps that landed are answered, the rest are finished.", stop.Label, stop.Outcome, op.ID)
	}
	return out, stepErr
}

// offerAgain words a step refused under a gate that drops a record for
// what its writer was or did (evicted, abandoned, overtaken) when the
// record in the way is another node's copy of the operation: the refusal
// is about that node, so this node takes the gesture itself, under the
// same op_id, once the log's duplicate window has passed (Replication ›
// Who a refusal names).
func (g *NodeGates) offerAgain(err error, op Op) error {
	ref, ok := engine.AsRefusal(err)
	if !ok {
		return err
	}
	gate, _ := ref.Fields["gate"].(string)
	writer, _ := ref.Fields["writer"].(string)
	if writer == "" || len(g.Replicas) == 0 || writer == g.Replicas[0].cfg.Node || (gate != "evicted" && gate != GateAbandoned && gate != GateOvertaken) {
		return err
	}
	again := *ref
	again.Fields = maps.Clone(ref.Fields)
	again.Message = fmt.Sprintf("%s That record is %s's copy of this gesture, not one this node wrote: call again with op_id %s and the same arguments once the log's duplicate window (2 minutes) has passed, and this node takes it.",
		ref.Message, writer, op.ID)
	return again.With("op_id", op.ID.String())
}
