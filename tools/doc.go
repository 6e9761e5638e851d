// Package tools defines every Crewlet tool once: its name, description,
// JSON schemas, MCP annotations, strict argument parsing and a handler that
// calls the engine's service API and renders the answer or refusal as an
// MCP tool result. Every tool is one entry of one catalogue, registered by
// its domain's tools file; the operator, seat and read-only toolsets are
// filters over it, each tool offered where a service it calls is. It knows
// the engine's API, never NATS or SQL; package mcp assembles these tools
// into servers per surface.
package tools
