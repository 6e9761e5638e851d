//go:build integration

package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// featuresPlan is one features.mjs run: the SDK and transport as
// harness.mjs takes them, the project and item the Go side filed, and
// whether the surface keeps sessions (logging, subscriptions).
type featuresPlan struct {
	SDK       string        `json:"sdk"`
	Transport planTransport `json:"transport"`
	Project   string        `json:"project"`
	Item      string        `json:"item"`
	Sessions  bool          `json:"sessions"`
}

type featuresReport struct {
	SDK      string `json:"sdk"`
	Protocol string `json:"protocol"`
	Checks   []struct {
		Name   string `json:"name"`
		Pass   bool   `json:"pass"`
		Detail string `json:"detail"`
	} `json:"checks"`
	Fatal string `json:"fatal"`
}

// TestTypeScriptSDKFeatures: the official TypeScript SDK clients (1.x and
// 2.x, pinned in testdata/tsclient) against the binary on stdio and on
// serve's operator and seat surfaces: tool annotations, resource
// templates, the listing, a read, completions, prompts and, where the
// surface keeps sessions, logging/setLevel with a log line and a
// subscription told of a write to its item.
func TestTypeScriptSDKFeatures(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: skipped in -short mode")
	}
	dir := nodeHarness(t)
	bin := BuildBinary(t)
	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	for _, sdk := range []string{"v1", "v2"} {
		t.Run("stdio/"+sdk, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "data")
			key := strings.ToUpper("st" + sdk)
			// Filed first by a child of its own, which then exits and
			// leaves the data directory to the SDK's child.
			c := StdioClient(t, "mcp", "--data", data, "--log-format", "json")
			seedTracker(t, c, key)
			c.Close()
			runFeatures(t, dir, featuresPlan{SDK: sdk, Project: key, Item: key + "-1", Sessions: true,
				Transport: planTransport{Kind: "stdio", Command: bin, Args: []string{"mcp", "--data", data, "--log-format", "json"}}})
		})
		t.Run("operator/"+sdk, func(t *testing.T) {
			key := strings.ToUpper("op" + sdk)
			seedTracker(t, s.HTTPClient(t), key)
			runFeatures(t, dir, featuresPlan{SDK: sdk, Project: key, Item: key + "-1", Sessions: true,
				Transport: planTransport{Kind: "http", URL: s.URL, Headers: map[string]string{"Authorization": "Bearer " + s.Token}}})
		})
		t.Run("seat/"+sdk, func(t *testing.T) {
			key := strings.ToUpper("se" + sdk)
			seedTracker(t, s.HTTPClient(t), key)
			runFeatures(t, dir, featuresPlan{SDK: sdk, Project: key, Item: key + "-1",
				Transport: planTransport{Kind: "http", URL: s.BaseURL + "/seat/mcp", Headers: seatHeaders(s, "ts"+sdk)}})
		})
	}
}

// runFeatures runs features.mjs on p and fails the test on every check
// that did not pass, or one that did not run.
func runFeatures(t *testing.T, dir string, p featuresPlan) {
	t.Helper()
	var rep featuresReport
	runNodeScript(t, dir, "features.mjs", p.SDK, p, &rep)
	if rep.Fatal != "" {
		t.Fatalf("%s: %s", p.SDK, rep.Fatal)
	}
	want := []string{"annotations", "resources/templates/list", "resources/list", "resources/read", "completion/complete", "prompts"}
	if p.Sessions {
		want = append(want, "logging", "subscribe")
	}
	ran := map[string]bool{}
	for _, c := range rep.Checks {
		ran[c.Name] = true
		if !c.Pass {
			t.Errorf("%s (protocol %s) %s: %s", p.SDK, rep.Protocol, c.Name, c.Detail)
		}
	}
	t.Logf("%s on protocol %s: %d checks", p.SDK, rep.Protocol, len(rep.Checks))
	for _, w := range want {
		if !ran[w] {
			t.Errorf("%s: check %s did not run", p.SDK, w)
		}
	}
}
