package mcp

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// BenchmarkToolCallSchemaTax is one update_work_item call over the
// operator MCP's Streamable HTTP (mcp-go's client and server, in one
// process, on loopback; the tool's handler over the fake tracker), with
// the tool declared by its real input schema and by a one-line one. On
// every tools/call of the 2026-07-28 protocol, mcp-go v1.2.1 derives the
// tool's x-mcp-header bindings again from its whole input schema (a
// marshal and an unmarshal of it, mcp.ExtractParamHeaderBindings), though
// no Crewlet tool declares one: the difference between the two rows is
// that work, per call, the part of the MCP tax that grows with a tool's
// schema. Beside them, the raw limit: the same call to a tool that is not
// there (mcp-go's dispatch with no handler, the bench's mcp_floor).
//
//	go test -run '^$' -bench ToolCallSchemaTax -benchtime 2000x ./mcp
func BenchmarkToolCallSchemaTax(b *testing.B) {
	for _, v := range []struct{ name, tool, schema string }{
		{"schema=real", "update_work_item", ""},
		{"schema=one-line", "update_work_item", `{"type":"object"}`},
		{"floor=no-such-tool", "no_such_tool", ""},
	} {
		b.Run(v.name, func(b *testing.B) {
			s := NewServer("bench", slog.New(slog.DiscardHandler), catalogueOf(newFake()))
			st := s.GetTool("update_work_item")
			if st == nil {
				b.Fatal("no update_work_item tool")
			}
			bytes := len(st.Tool.RawInputSchema)
			if v.schema != "" {
				small := *st
				small.Tool.RawInputSchema = []byte(v.schema)
				bytes = len(v.schema)
				s.AddTools(small)
			}
			mux := http.NewServeMux()
			mux.Handle("/operator/mcp", OperatorHandler(s, slog.New(slog.DiscardHandler)))
			ts := httptest.NewServer(mux)
			defer ts.Close()
			ctx := context.Background()
			c, err := client.NewStreamableHttpClient(ts.URL+"/operator/mcp", transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer x"}))
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			if err := c.Start(ctx); err != nil {
				b.Fatal(err)
			}
			if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
				b.Fatal(err)
			}
			var req mcpgo.CallToolRequest
			req.Params.Name = v.tool
			req.Params.Arguments = map[string]any{"key": "ENG-1", "if_match": 3, "title": "Checkout fails at the payment step"}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := c.CallTool(ctx, req); err != nil && v.tool != "no_such_tool" {
					b.Fatal(err)
				}
			}
			if v.tool == "update_work_item" {
				b.ReportMetric(float64(bytes), "schema-bytes")
			}
		})
	}
}
