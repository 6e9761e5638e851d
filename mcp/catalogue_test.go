package mcp

import (
	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/fleettools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
	"github.com/crewlet/crewlet/tools/turntools"
)

// catalogueOf is the build's toolsets over services (a node's, or fakes),
// each toolset there where its service is, as a node's surfaces build
// theirs.
func catalogueOf(services ...any) tools.Catalogue {
	var c tools.Catalogue
	var gates fleettools.Fleet
	var retention fleettools.Retention
	var desk turntools.Desk
	var know turntools.Knowledge
	for _, s := range services {
		switch s := s.(type) {
		case trackertools.Tracker:
			c = append(c, trackertools.Toolset(s))
		case kbtools.KB:
			c = append(c, kbtools.Toolset(s))
		case fleettools.Fleet:
			gates = s
		case fleettools.Retention:
			retention = s
		case turntools.Desk:
			desk = s
		}
		if k, ok := s.(turntools.Knowledge); ok {
			know = k
		}
	}
	if desk != nil {
		c = append(c, turntools.Toolset(desk, know))
	}
	if gates != nil || retention != nil {
		c = append(c, fleettools.Toolset(gates, retention))
	}
	return c
}

// definitions are every tool of the build over no service.
func definitions() tools.Catalogue {
	return append(domains.Builtin().Definitions(), fleettools.Toolset(nil, nil), turntools.Toolset(nil, nil))
}
