//go:build integration

package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// restGet is GET path on s's read path with the operator token.
func restGet(t *testing.T, s *Serve, path string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("GET", s.BaseURL+path, nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var body map[string]any
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("GET %s: %q", path, raw)
	}
	return resp.StatusCode, body
}

// TestServeModes: `crewlet serve --mode maintenance` and `--mode seal` are
// real modes that publish nothing: the REST read path answers stale and
// consistent_prefix, refuses linearizable `maintenance`, and the operator
// MCP's writes (and its linearizable reads) refuse `maintenance`. The read
// path sits behind the operator token like every route but /healthz.
func TestServeModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	exerciseTracker(t, s.HTTPClient(t), "OPS")
	if code, body := restGet(t, s, "/api/v1/projects"); code != 200 || body["level"] != "stale" {
		t.Fatalf("normal mode: %d %v", code, body)
	}
	resp, err := http.Get(s.BaseURL + "/api/v1/projects")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("the read path without a token: %d", resp.StatusCode)
	}
	s.Stop(t)

	for _, mode := range []string{"maintenance", "seal"} {
		t.Run(mode, func(t *testing.T) {
			s := StartServe(t, dir, "--mode", mode)
			defer s.Stop(t)
			code, body := restGet(t, s, "/api/v1/projects?read_level=linearizable")
			if code != http.StatusServiceUnavailable || body["refused"] != "maintenance" {
				t.Fatalf("linearizable in %s: %d %v", mode, code, body)
			}
			// The REST path can choose a level, and is told which.
			if msg, _ := body["message"].(string); !strings.Contains(msg, "stale") {
				t.Errorf("REST maintenance in %s does not name the levels still answered: %q", mode, msg)
			}
			for _, l := range []string{"stale", "consistent_prefix"} {
				code, body := restGet(t, s, "/api/v1/work-items?project=OPS&read_level="+l)
				if code != 200 || body["level"] != l {
					t.Fatalf("%s in %s: %d %v", l, mode, code, body)
				}
			}
			c := s.HTTPClient(t)
			ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
			defer cancel()
			for name, args := range map[string]map[string]any{
				"create_project": {"key": "NEW", "name": "New"},
				"list_projects":  {},
			} {
				req := mcpgo.CallToolRequest{}
				req.Params.Name, req.Params.Arguments = name, args
				res, err := c.CallTool(ctx, req)
				if err != nil {
					t.Fatal(err)
				}
				obj := resultObject(res)
				if !res.IsError || obj["refused"] != "maintenance" {
					t.Fatalf("%s in %s: %s", name, mode, resultText(res))
				}
				// An MCP caller cannot choose a level: it is told what it
				// can do instead.
				msg, _ := obj["message"].(string)
				if strings.Contains(msg, "stale") || strings.Contains(msg, "consistent_prefix") ||
					!strings.Contains(msg, "writes and linearizable reads") || !strings.Contains(msg, "normal mode") || !strings.Contains(msg, "Try again later") {
					t.Errorf("%s in %s over MCP: %q", name, mode, msg)
				}
			}
		})
	}
}
