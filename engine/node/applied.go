package node

import "github.com/crewlet/crewlet/engine/statelog"

// OnApplied calls fn after each commit of any of this node's appliers
// with the scopes of the records the commit applied ("item:<id>",
// "project:ENG", "page:<id>", "space:DOCS"): the post-commit seam MCP
// resource subscriptions hang on (mcp.Applied). fn runs on an applier and
// must not block. The returned func stops the calls.
func (n *Node) OnApplied(fn func(scopes []string)) (stop func()) {
	var stops []func()
	for _, d := range n.domains {
		if d.replica == nil {
			continue
		}
		stops = append(stops, d.replica.OnApplied(func(recs []statelog.Applied) {
			var scopes []string
			for _, r := range recs {
				scopes = append(scopes, r.Scope...)
			}
			if len(scopes) > 0 {
				fn(scopes)
			}
		}))
	}
	return func() {
		for _, s := range stops {
			s()
		}
	}
}
