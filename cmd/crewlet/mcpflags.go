package main

import (
	"flag"
	"strings"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/surfaces"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// MCPSection is mcp.*: what every MCP surface of the node offers.
type MCPSection struct {
	// Toolsets is mcp.toolsets: the toolsets offered (tracker, kb,
	// fleet); unset or [all]: every one.
	Toolsets []string `yaml:"toolsets"`
	// ReadOnly is mcp.read_only: offer only the tools that change nothing.
	ReadOnly bool `yaml:"read_only"`
}

// Filter is the section as a tools.Filter, or the ConfigError naming
// an unknown toolset.
func (m MCPSection) Filter() (tools.Filter, error) {
	sets, err := surfaces.Catalogue(domains.Builtin()).ParseToolsets(strings.Join(m.Toolsets, ","))
	if err != nil {
		return tools.Filter{}, &ConfigError{Field: "mcp.toolsets", Value: strings.Join(m.Toolsets, ","), Reason: reason(err)}
	}
	return tools.Filter{Toolsets: sets, ReadOnly: m.ReadOnly}, nil
}

func reason(err error) string {
	if r, ok := engine.AsRefusal(err); ok {
		return r.Message
	}
	return err.Error()
}

// filterFlags are --toolsets and --read-only, on every command that
// serves MCP: set, they override mcp.toolsets and mcp.read_only.
type filterFlags struct {
	fs       *flag.FlagSet
	toolsets *string
	readOnly *bool
}

func addFilterFlags(fs *flag.FlagSet) filterFlags {
	return filterFlags{
		fs:       fs,
		toolsets: fs.String("toolsets", "", "offer only these `toolsets`, comma-separated: "+strings.Join(surfaces.Catalogue(domains.Builtin()).Names(), ", ")+" or all (default mcp.toolsets, else all)"),
		readOnly: fs.Bool("read-only", false, "offer only the tools that change nothing (default mcp.read_only)"),
	}
}

// apply writes the flags that were set into m.
func (f filterFlags) apply(m *MCPSection) {
	if flagSet(f.fs, "toolsets") {
		m.Toolsets = strings.Split(*f.toolsets, ",")
	}
	if flagSet(f.fs, "read-only") {
		m.ReadOnly = *f.readOnly
	}
}
