// Package domains is the registry of the domains this build runs: one
// line a domain, each naming its engine side (the statelog.Spec a node
// runs: its stream, schema and records) and its tools over the service
// that Spec builds. A domain's HTTP routes are its service's own
// (rest.Router), which the node holds in this order. Adding a domain is
// its own packages and one line in Builtin: the node runs its Spec, the
// surfaces serve its tools and routes, and cmd names no domain.
package domains

import (
	"fmt"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/usage"
	"github.com/crewlet/crewlet/engine/vectors"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
	"github.com/crewlet/crewlet/tools/usagetools"
)

// Builtin are the domains of this build, in the order a node runs them.
func Builtin() Registry {
	return Registry{
		Of(tracker.Spec, trackertools.Toolset),
		Of(kb.Spec, kbtools.Toolset),
		Of(usage.Spec, usagetools.Toolset),
		Headless(vectors.Spec),
	}
}

// Domain is one domain of the build.
type Domain struct {
	// Spec is the domain as a node runs it.
	Spec statelog.Spec
	// toolset builds its tools over its service; nil builds the
	// definitions alone.
	toolset func(svc rest.Router) tools.Toolset
}

// Of is the registry entry of the domain spec runs, whose tools toolset
// builds over its service: the service spec's Service builds, which must
// be an S (the interface its tools call). A service that is not one is a
// wiring mistake, refused where the toolset is bound.
func Of[S any](spec statelog.Spec, toolset func(S) tools.Toolset) Domain {
	return Domain{Spec: spec, toolset: func(svc rest.Router) tools.Toolset {
		if svc == nil {
			var none S
			return toolset(none)
		}
		s, ok := svc.(S)
		if !ok {
			panic(fmt.Sprintf("domains: the %s domain's service %T is not the %T its tools call", spec.Name(), svc, (*S)(nil)))
		}
		return toolset(s)
	}}
}

// Headless is the registry entry of a domain with no tools of its own:
// the vectors domain, whose index the tracker's and the knowledge base's
// searches rank with (engine/node links them) and whose coverage their
// answers carry.
func Headless(spec statelog.Spec) Domain { return Domain{Spec: spec} }

// HasTools says the domain brings tools of its own (not Headless).
func (d Domain) HasTools() bool { return d.toolset != nil }

// Registry is the domains a build runs, in order.
type Registry []Domain

// Specs are the domains as a node runs them (node.Config.Domains).
func (r Registry) Specs() []statelog.Spec {
	out := make([]statelog.Spec, len(r))
	for i, d := range r {
		out[i] = d.Spec
	}
	return out
}

// Toolsets are the domains' tools bound to their services (service
// gives a domain's, nil where the node does not run it, which leaves its
// tools out).
func (r Registry) Toolsets(service func(engine.Domain) rest.Router) tools.Catalogue {
	var out tools.Catalogue
	for _, d := range r {
		if svc := service(d.Spec.Name()); svc != nil && d.toolset != nil {
			out = append(out, d.toolset(svc))
		}
	}
	return out
}

// Definitions are every domain's tools over no service: what a node
// without the data role offers, and the toolsets --toolsets names.
func (r Registry) Definitions() tools.Catalogue {
	var out tools.Catalogue
	for _, d := range r {
		if d.toolset != nil {
			out = append(out, d.toolset(nil))
		}
	}
	return out
}
