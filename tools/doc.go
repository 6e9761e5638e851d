// Package tools is the kit every Crewlet toolset is built on: Deps (the
// surface a tool is built for), Entry, Toolset and Catalogue (the
// operator, seat and read-only toolsets are filters over one catalogue),
// Filter (--toolsets, --read-only), strict argument parsing (Param,
// Args), the wire form of answers and refusals, seat op-id derivation,
// and the machinery of resources, prompts and completions. It names no
// domain: each domain's tools are their own package (tools/trackertools,
// tools/kbtools, tools/fleettools), listed by the registry (package
// domains). It knows the engine's vocabulary, never NATS or SQL; package
// mcp assembles a catalogue into servers per surface.
package tools
