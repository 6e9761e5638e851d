package node

import (
	"context"
	"net/url"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Reanchor is crewlet retention reanchor of one state log (log names the
// domain or its stream): this node's rows move onto the log that changed
// under them in a new generation, in place, with no restart, and the
// node's other domains are untouched (statelog.Replica.Reanchor). opID,
// when given, names the generation record's operation (a retry of the
// same reanchor); none mints one.
func (n *Node) Reanchor(ctx context.Context, log, kase string, discard bool, opID string) (statelog.Reanchored, error) {
	d := n.findLog(log)
	if d == nil || d.replica == nil {
		var names []string
		for _, x := range n.domains {
			names = append(names, string(x.spec.Name())+" ("+x.spec.Stream+")")
		}
		return statelog.Reanchored{}, engine.Refuse(engine.CodeNotFound, "this node runs no state log named %q; name one of %s.", log, strings.Join(names, ", "))
	}
	op, err := statelog.OpFor(n.cfg.Clock.Now(), engine.WriteOptions{OpID: opID}, "reanchor", string(d.spec.Name()))
	if err != nil {
		return statelog.Reanchored{}, err
	}
	return d.replica.Reanchor(engine.WithActor(ctx, "operator"), op, kase, discard, n.peersSeq(d.spec.Name()))
}

// peersSeq is the highest checkpoint a peer published for domain d in the
// positions register as this node last read it.
func (n *Node) peersSeq(d engine.Domain) uint64 {
	if n.beat == nil {
		return 0
	}
	known, _ := n.beat.Known()
	var top uint64
	for _, p := range known {
		if p.Domain == d && p.Node != n.cfg.Name {
			top = max(top, p.Seq)
		}
	}
	return top
}

// reanchorRoute is POST /api/v1/logs/{log}/reanchor?case=C[&discard=true][&op_id=…].
func (n *Node) reanchorRoute(ctx context.Context, q *rest.Query) (any, error) {
	v, err := url.ParseQuery(q.Raw())
	if err != nil {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "the query string is malformed: %v", err)
	}
	for k, vs := range v {
		if (k != "case" && k != "discard" && k != "op_id") || len(vs) != 1 {
			return nil, engine.Refuse(engine.CodeInvalidArgument, "query parameter %q is not one this route takes once: case (recreated, restored, abandoned), discard=true, op_id.", k)
		}
	}
	discard := v.Get("discard")
	if discard != "" && discard != "true" && discard != "false" {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "discard %q is not true or false.", discard)
	}
	if v.Get("case") == "" {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "case is required: recreated (a stream deleted and created again), restored (a broker restored from an older copy; add discard=true to void what was written after the restore), or abandoned (a generation only an evicted peer held).")
	}
	return n.Reanchor(ctx, q.Path("log"), v.Get("case"), discard == "true", v.Get("op_id"))
}
