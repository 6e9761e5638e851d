package mcp

import (
	"context"
	"encoding/json"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

// newToolServer makes each of Crewlet's MCP servers (a node's surfaces,
// the proxies, the joined servers) with opts, its tools to be registered
// through the listedSchemas it returns: s.AddTools(listed.slim(ts)...).
func newToolServer(version string, opts ...server.ServerOption) (*server.MCPServer, listedSchemas) {
	listed := listedSchemas{}
	opts = append(opts, server.WithToolFilter(listed.restore))
	return server.NewMCPServer(ServerName, version, opts...), listed
}

// listedSchemas holds the input schema of each tool registered with a
// one-line stand-in, to be listed in its place. On every tools/call of the
// 2026-07-28 protocol mcp-go v1.2.1 derives the called tool's x-mcp-header
// bindings again from the schema it holds (mcp.ExtractParamHeaderBindings:
// an encoding and a decoding of the whole schema, about 50 µs of a 2.5 kB
// one: BenchmarkToolCallSchemaTax), though it only needs the bindings. A
// tool none of whose parameters travels in a header is therefore
// registered with {"type":"object"}, which has none either, and the tool
// filter (mcp-go's tools/list seam, restore) puts its real schema back in
// every listing, so a client lists what it always did. A tool with a
// header binding keeps its schema: mcp-go checks those on each call.
type listedSchemas map[string]json.RawMessage

// standIn is the schema a tool is registered with: an object, no header
// bindings.
var standIn = json.RawMessage(`{"type":"object"}`)

// slim encodes each tool's input schema once (mcp-go would otherwise
// encode a structured one again on each call) and, where it has no header
// binding, keeps it here and registers the stand-in.
func (l listedSchemas) slim(ts []server.ServerTool) []server.ServerTool {
	for i := range ts {
		raw := ts[i].Tool.RawInputSchema
		if len(raw) == 0 {
			var err error
			if raw, err = json.Marshal(ts[i].Tool.InputSchema); err != nil {
				continue // left structured: mcp-go encodes it as before
			}
		}
		ts[i].Tool.RawInputSchema = raw
		ts[i].Tool.InputSchema = mcpgo.ToolInputSchema{}
		if len(mcpgo.ExtractParamHeaderBindings(&ts[i].Tool)) > 0 {
			continue
		}
		l[ts[i].Tool.Name] = raw
		ts[i].Tool.RawInputSchema = standIn
	}
	return ts
}

// restore is the tool filter: each listed tool (a copy of the registered
// one) gets its real schema back.
func (l listedSchemas) restore(_ context.Context, ts []mcpgo.Tool) []mcpgo.Tool {
	for i := range ts {
		if raw, ok := l[ts[i].Name]; ok {
			ts[i].RawInputSchema = raw
		}
	}
	return ts
}
