package tools_test

import (
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/usage"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/fleettools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
	"github.com/crewlet/crewlet/tools/turntools"
	"github.com/crewlet/crewlet/tools/usagetools"
)

// catalogueOf is the catalogue of the build's toolsets over services
// (typed nils: every tool built, no service ever reached), each toolset
// there where its service is, as a node's surfaces build theirs.
func catalogueOf(services ...any) tools.Catalogue {
	var c tools.Catalogue
	var gates fleettools.Fleet
	var retention fleettools.Retention
	for _, s := range services {
		switch s := s.(type) {
		case *tracker.Service:
			c = append(c, trackertools.Toolset(s))
		case *kb.Service:
			c = append(c, kbtools.Toolset(s))
		case *usage.Service:
			c = append(c, usagetools.Toolset(s))
		case *statelog.NodeGates:
			gates = s
		case *fleet.Status:
			retention = s
		case *node.Node:
			c = append(c, turntools.Toolset(s, (*kb.Service)(nil)))
		}
	}
	if gates != nil || retention != nil {
		c = append(c, fleettools.Toolset(gates, retention))
	}
	return c
}

// surface is a surface's Deps and the catalogue it is built from.
type surface struct {
	Surface   tools.Surface
	catalogue tools.Catalogue
}

// set builds the surface's tools.
func (s surface) set() []server.ServerTool {
	return s.catalogue.Set(tools.Deps{Surface: s.Surface})
}
