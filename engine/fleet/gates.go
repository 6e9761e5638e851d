package fleet

import (
	"context"
	"fmt"
	"regexp"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/ledger"
)

// NodeGates evicts a node from the fleet and readmits it: one node-gate
// record on every domain's log, each a step of the operation named by
// its domain. On every node the eviction gate then drops every record the
// evicted node publishes after its eviction record, until a readmission.
type NodeGates struct {
	Replicas []*statelog.Replica
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

func (g *NodeGates) gate(ctx context.Context, w engine.WriteOptions, node string, evict bool) (NodeGateWrite, error) {
	if !nodeNameRE.MatchString(node) {
		return NodeGateWrite{}, engine.Refuse(engine.CodeInvalidArgument, "node %q is not a node name (node.name: letters, digits, '.', '_' and '-'); crewlet retention status lists the fleet's nodes.", node)
	}
	verb := "readmit"
	if evict {
		verb = "evict"
	}
	op, err := statelog.OpFor(g.Clock.Now(), w, verb, node)
	out := NodeGateWrite{WriteResult: engine.WriteResult{OpID: op.ID.String()}, Node: node, Evicted: evict, Steps: []GateStep{}}
	if err != nil {
		return out, err
	}
	out.Outcome = engine.Applied
	for _, r := range g.Replicas {
		// Each log's record is a step named by its domain, never by its
		// place in the walk, so a re-run under the id finishes the rest.
		sid, err := ledger.Step(op.ID, verb, string(r.Domain()))
		if err != nil {
			return out, err
		}
		wr, err := r.GateNode(ctx, statelog.Op{ID: sid, Digest: op.Digest, Vouched: op.Vouched}, node, evict)
		out.Steps = append(out.Steps, GateStep{Domain: string(r.Domain()), OpID: sid.String(), Outcome: wr.Outcome, Position: wr.Position})
		if err != nil {
			return out, err
		}
		if wr.Outcome != engine.Applied {
			out.Outcome = wr.Outcome
			out.Message = fmt.Sprintf("The %s log's step is %s, so the gate stopped there. Call again with op_id %s and the same arguments: the steps that landed are answered, the rest are finished.", r.Domain(), wr.Outcome, op.ID)
			return out, nil
		}
		out.Position = wr.Position
	}
	return out, nil
}
