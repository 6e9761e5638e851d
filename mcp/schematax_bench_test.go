package mcp

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/tools"
)

// BenchmarkToolCallSchemaTax is one update_work_item call over the
// operator MCP's Streamable HTTP (mcp-go's client and server, in one
// process, on loopback; the tool's handler over the fake tracker), with
// the tool registered as a node registers it (schema=listed: a one-line
// stand-in, its real schema put back in listings, listedSchemas) and
// registered by its real input schema (schema=registered, what a node did
// before). On every tools/call of the 2026-07-28 protocol, mcp-go v1.2.1
// derives the tool's x-mcp-header bindings again from the whole schema it
// holds (a marshal and an unmarshal of it, mcp.ExtractParamHeaderBindings),
// though no Crewlet tool declares one: the difference between the two rows
// is that work, per call. Beside them, the raw limit: the same call to a
// tool that is not there (mcp-go's dispatch with no handler, the bench's
// mcp_floor).
//
//	go test -run '^$' -bench ToolCallSchemaTax -benchtime 2000x ./mcp
func BenchmarkToolCallSchemaTax(b *testing.B) {
	for _, v := range []struct {
		name, tool string
		registered bool
	}{
		{"schema=listed", "update_work_item", false},
		{"schema=registered", "update_work_item", true},
		{"floor=no-such-tool", "no_such_tool", false},
	} {
		b.Run(v.name, func(b *testing.B) {
			c := catalogueOf(newFake())
			s := NewServer("bench", slog.New(slog.DiscardHandler), c)
			st := s.GetTool("update_work_item")
			if st == nil {
				b.Fatal("no update_work_item tool")
			}
			bytes := len(st.Tool.RawInputSchema)
			if v.registered {
				full := *st
				full.Tool.RawInputSchema = realSchema(b, c, "update_work_item")
				bytes = len(full.Tool.RawInputSchema)
				s.AddTools(full)
			}
			mux := http.NewServeMux()
			mux.Handle("/operator/mcp", OperatorHandler(s, slog.New(slog.DiscardHandler)))
			ts := httptest.NewServer(mux)
			defer ts.Close()
			ctx := context.Background()
			cl, err := client.NewStreamableHttpClient(ts.URL+"/operator/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer x"}))
			if err != nil {
				b.Fatal(err)
			}
			defer cl.Close()
			if err := cl.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := cl.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			var req mcpgo.CallToolRequest
			req.Params.Name = v.tool
			req.Params.Arguments = map[string]any{"key": "ENG-1", "if_match": 3, "title": "Checkout fails at the payment step"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := cl.CallTool(ctx, req); err != nil && v.tool != "no_such_tool" {
					b.Fatal(err)
				}
			}
			if v.tool == "update_work_item" {
				b.ReportMetric(float64(bytes), "schema-bytes")
			}
		})
	}
}

// realSchema is the input schema of the operator tool name, encoded.
func realSchema(b *testing.B, c tools.Catalogue, name string) json.RawMessage {
	for _, t := range c.Definitions(tools.Operator, tools.Filter{}) {
		if t.Name == name {
			raw, err := json.Marshal(t.InputSchema)
			if err != nil {
				b.Fatal(err)
			}
			return raw
		}
	}
	b.Fatalf("no operator tool %s", name)
	return nil
}
