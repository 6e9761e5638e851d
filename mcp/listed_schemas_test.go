package mcp

import (
	"encoding/json"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/tools"
)

// TestListedSchemas: every kind of Crewlet MCP server (a node's surface,
// a joined node's operator and seat servers) registers each tool with the
// one-line stand-in schema (so mcp-go's per-call scan for header bindings
// has nothing to read) and lists every tool with its real input schema,
// the catalogue's, byte for byte as encoded; a tool with a parameter bound
// to a header keeps its schema registered, for mcp-go checks those on
// each call.
func TestListedSchemas(t *testing.T) {
	c := catalogueOf(newFake())
	logger := testLogger(t)
	for _, v := range []struct {
		name    string
		s       *server.MCPServer
		surface tools.Surface
	}{
		{"operator", NewServer("test", logger, c), tools.Operator},
		{"joined", NewJoinedServer(nil, c, "test", logger), tools.Operator},
		{"joined seat", NewJoinedSeatServer(nil, c, nil, "n1", "test", logger), tools.Seat},
	} {
		t.Run(v.name, func(t *testing.T) { checkListed(t, v.s, c.Definitions(v.surface, tools.Filter{})) })
	}

	bound := server.ServerTool{Tool: mcpgo.NewTool("bound", mcpgo.WithString("region", func(p map[string]any) { p["x-mcp-header"] = "Region" }))}
	l := listedSchemas{}
	out := l.slim([]server.ServerTool{bound})
	if _, kept := l["bound"]; kept || string(out[0].Tool.RawInputSchema) == string(standIn) || len(mcpgo.ExtractParamHeaderBindings(&out[0].Tool)) != 1 {
		t.Errorf("a tool with a header binding was registered with %s", out[0].Tool.RawInputSchema)
	}
}

// checkListed: s holds each of defs with the stand-in schema and lists it
// with its own.
func checkListed(t *testing.T, s *server.MCPServer, defs []mcpgo.Tool) {
	want := map[string]string{}
	for _, def := range defs {
		raw, err := json.Marshal(def.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		want[def.Name] = string(raw)
		if st := s.GetTool(def.Name); st == nil || string(st.Tool.RawInputSchema) != string(standIn) {
			t.Errorf("%s is registered with %v, want the stand-in", def.Name, st)
		}
	}
	list, err := inProcess(t, s).ListTools(ctxT(t), mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Tools) != len(want) || len(want) == 0 {
		t.Fatalf("listed %d tools, the catalogue has %d", len(list.Tools), len(want))
	}
	for _, lt := range list.Tools {
		got, err := json.Marshal(lt.InputSchema)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != want[lt.Name] {
			t.Errorf("%s is listed with\n%s\nwant\n%s", lt.Name, got, want[lt.Name])
		}
	}
}
