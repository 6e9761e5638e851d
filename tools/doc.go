// Package tools defines every Crewlet tool once: its name, description,
// JSON schemas, MCP annotations, strict argument parsing and a handler that
// calls the engine's service API and renders the answer or refusal as an
// MCP tool result. It knows the engine's API, never NATS or SQL; package mcp
// assembles these tools into servers per surface.
package tools
