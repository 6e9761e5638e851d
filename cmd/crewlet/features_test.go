//go:build integration

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/internal/mcptest"
	"github.com/crewlet/crewlet/surfaces"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
)

// started listens for c's notifications, starts it (closed when the test
// ends), runs the classic checks and seeds project key with one item.
func started(ctx context.Context, t *testing.T, c *client.Client, key string) *mcptest.Notes {
	t.Helper()
	t.Cleanup(func() { c.Close() })
	notes := mcptest.Listen(c)
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	classic(t, c)
	seedTracker(t, c, key)
	return notes
}

// classic initializes c on the classic protocol (2025-11-25), the one
// with sessions: logging/setLevel and resources/subscribe live there
// (mcp-go's client would otherwise take the stateless 2026-07-28 one).
func classic(t *testing.T, c *client.Client) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	init := mcpgo.InitializeRequest{}
	init.Params.ProtocolVersion = mcpgo.LATEST_LEGACY_PROTOCOL_VERSION
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
}

// seedTracker files project key and two items in it through c.
func seedTracker(t *testing.T, c *client.Client, key string) {
	t.Helper()
	Call(t, c, "create_project", map[string]any{"key": key, "name": "Project " + key})
	Call(t, c, "create_work_item", map[string]any{"project": key, "title": "Login page times out", "tags": []any{"auth"}})
	Call(t, c, "create_work_item", map[string]any{"project": key, "title": "Login times out on slow links"})
}

// TestMCPFeaturesGoClient: mcp-go's client against the binary on stdio
// (`crewlet mcp`) and on serve's operator and seat surfaces over HTTP:
// resources (templates, list, read), completions, prompts; where the
// surface keeps sessions, log lines after logging/setLevel and a
// subscription told of a write to its item.
func TestMCPFeaturesGoClient(t *testing.T) {
	t.Parallel()
	bin := BuildBinary(t)
	// Each surface's run has the budget of one harness run.
	budget := func(t *testing.T) context.Context {
		ctx, cancel := context.WithTimeout(context.Background(), harnessTimeout)
		t.Cleanup(cancel)
		return ctx
	}

	t.Run("stdio", func(t *testing.T) {
		ctx := budget(t)
		c, err := client.NewStdioMCPClient(bin, nil, "mcp", "--data", filepath.Join(t.TempDir(), "data"), "--log-format", "json")
		if err != nil {
			t.Fatal(err)
		}
		// The transport is running already; Start hands its
		// notifications to the client's handlers.
		notes := started(ctx, t, c, "STD")
		mcptest.CheckFeatures(ctx, t, c, notes, mcptest.Features{Project: "STD", Item: "STD-1", Logging: true,
			Update: func() { Call(t, c, "update_work_item", map[string]any{"key": "STD-1", "status": "in_progress"}) }})
	})

	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	t.Run("operator", func(t *testing.T) {
		ctx := budget(t)
		c, err := client.NewStreamableHttpClient(s.URL, transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + s.Token}), transport.WithContinuousListening())
		if err != nil {
			t.Fatal(err)
		}
		notes := started(ctx, t, c, "OPR")
		// The write comes through another client: the applier, not the
		// call, is what tells the subscriber.
		other := s.HTTPClient(t)
		mcptest.CheckFeatures(ctx, t, c, notes, mcptest.Features{Project: "OPR", Item: "OPR-1", Logging: true,
			Update: func() { Call(t, other, "update_work_item", map[string]any{"key": "OPR-1", "status": "in_progress"}) }})
	})
	t.Run("seat", func(t *testing.T) {
		ctx := budget(t)
		seedTracker(t, s.HTTPClient(t), "SEA")
		c := streamableClient(t, s.BaseURL+"/seat/mcp", seatHeaders(s, "features"))
		mcptest.CheckFeatures(ctx, t, c, nil, mcptest.Features{Project: "SEA", Item: "SEA-1"})
	})
}

func toolList(t *testing.T, c *client.Client) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	res, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	slices.Sort(out)
	return out
}

func sortedNames(ts []mcpgo.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name)
	}
	slices.Sort(out)
	return out
}

// TestToolFilters: --toolsets and --read-only narrow crewlet mcp's
// toolset, mcp.toolsets and mcp.read_only serve's operator and seat
// surfaces (a flag overriding the file), and an unknown toolset is a
// usage error naming the known ones.
func TestToolFilters(t *testing.T) {
	t.Parallel()
	bin := BuildBinary(t)
	c := StdioClient(t, "mcp", "--data", filepath.Join(t.TempDir(), "data"), "--toolsets", "kb", "--read-only")
	want := sortedNames(surfaces.Catalogue(domains.Builtin()).Definitions(tools.Operator, tools.Filter{Toolsets: []string{kbtools.Name}, ReadOnly: true}))
	if got := toolList(t, c); !slices.Equal(got, want) || !slices.Contains(got, kbtools.NameGetPage) {
		t.Errorf("crewlet mcp --toolsets kb --read-only offers %v, want %v", got, want)
	}

	cfg := filepath.Join(t.TempDir(), "crewlet.yaml")
	if err := os.WriteFile(cfg, []byte("mcp:\n  toolsets: [kb]\n  read_only: false\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s := StartServe(t, filepath.Join(t.TempDir(), "data"), "--config", cfg, "--toolsets", "tracker", "--read-only")
	f := tools.Filter{Toolsets: []string{trackertools.Name}, ReadOnly: true}
	if got, want := toolList(t, s.HTTPClient(t)), sortedNames(surfaces.Catalogue(domains.Builtin()).Definitions(tools.Operator, f)); !slices.Equal(got, want) {
		t.Errorf("serve --toolsets tracker --read-only: operator offers %v, want %v", got, want)
	}
	seat := streamableClient(t, s.BaseURL+"/seat/mcp", seatHeaders(s, "filters"))
	if got, want := toolList(t, seat), sortedNames(surfaces.Catalogue(domains.Builtin()).Definitions(tools.Seat, f)); !slices.Equal(got, want) || slices.Contains(got, trackertools.NameCreateWorkItem) {
		t.Errorf("serve --toolsets tracker --read-only: seat offers %v, want %v", got, want)
	}

	for _, args := range [][]string{{"mcp", "--toolsets", "tracker,issues"}, {"serve", "--toolsets", "issues"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 || !strings.Contains(string(out), "tracker, kb, usage, fleet") {
			t.Errorf("crewlet %v: %v, want a non-zero exit naming the toolsets\n%s", args, err, out)
		}
	}
}
