//go:build integration

package main

// TestMCPConformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance, pinned in
// testdata/conformance/package.json with its lockfile) against the real
// binary: `crewlet serve`'s operator MCP over Streamable HTTP. Every
// server scenario of the suite runs, each as a subtest, except those in
// conformanceSkipped, which call the suite's own fixture tools (tools
// named test_* that the suite's reference server has and Crewlet, a
// tracker and knowledge base, has no reason to).
//
// The suite's client sends no Authorization header and has no option for
// one, so the test puts a loopback proxy in front of the operator MCP
// that adds the bearer token: the token check is Crewlet's, tested
// elsewhere, and everything else reaches the server as the suite sent it.

import (
	"context"
	"encoding/json"
	"net"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// conformanceDir holds the suite's package.json, the committed
// package-lock.json and the Node.js 20 shim (node20.mjs).
const conformanceDir = "testdata/conformance"

// conformanceVersion is the suite's pinned version.
const conformanceVersion = "0.1.16"

// conformanceScenarioTimeout bounds one scenario: a node start, a
// session, a few requests, on a loaded machine under -race.
const conformanceScenarioTimeout = 2 * time.Minute

// conformanceSkipped are the server scenarios that need the suite's own
// fixture tools, prompts or resources (the "everything" reference
// server's), with why. Every other scenario must pass.
var conformanceSkipped = map[string]string{
	"tools-call-simple-text":        "calls the fixture tool test_simple_text",
	"tools-call-image":              "calls the fixture tool test_image_content (Crewlet's tools answer text and structured content, never images)",
	"tools-call-audio":              "calls the fixture tool test_audio_content (no audio in Crewlet)",
	"tools-call-embedded-resource":  "calls the fixture tool test_embedded_resource",
	"tools-call-mixed-content":      "calls the fixture tool test_multiple_content_types",
	"tools-call-with-logging":       "calls the fixture tool test_tool_with_logging",
	"tools-call-error":              "calls the fixture tool test_error_handling",
	"tools-call-with-progress":      "calls the fixture tool test_tool_with_progress",
	"tools-call-sampling":           "calls the fixture tool test_sampling (Crewlet never asks the client to sample)",
	"tools-call-elicitation":        "calls the fixture tool test_elicitation (Crewlet never elicits)",
	"elicitation-sep1034-defaults":  "calls the fixture tool test_elicitation_sep1034_defaults",
	"elicitation-sep1330-enums":     "calls the fixture tool test_elicitation_sep1330_enums",
	"json-schema-2020-12":           "looks for the fixture tool json_schema_2020_12_tool",
	"resources-read-text":           "reads the fixture resource test://static-text",
	"resources-read-binary":         "reads the fixture resource test://static-binary",
	"resources-templates-read":      "reads the fixture template test://template/{id}/data",
	"prompts-get-simple":            "gets the fixture prompt test_simple_prompt",
	"prompts-get-with-args":         "gets the fixture prompt test_prompt_with_arguments",
	"prompts-get-embedded-resource": "gets the fixture prompt test_prompt_with_embedded_resource",
	"prompts-get-with-image":        "gets the fixture prompt test_prompt_with_image",
}

func TestMCPConformance(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: skipped in -short mode")
	}
	dir := conformanceSuite(t)
	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	proxy := tokenProxy(t, s)

	list := exec.Command("node", "--import", "./node20.mjs", conformanceCLI, "list", "--server")
	list.Dir = dir
	out, err := list.CombinedOutput()
	if err != nil {
		t.Fatalf("conformance list: %v\n%s", err, out)
	}
	var scenarios []string
	for _, line := range strings.Split(string(out), "\n") {
		if name, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			scenarios = append(scenarios, strings.Fields(name)[0])
		}
	}
	if len(scenarios) < 20 {
		t.Fatalf("conformance list named %d scenarios:\n%s", len(scenarios), out)
	}
	for name := range conformanceSkipped {
		if !strings.Contains(string(out), "- "+name+" ") {
			t.Errorf("skipped scenario %s is not in the suite any more: take it off the list", name)
		}
	}
	for _, sc := range scenarios {
		t.Run(sc, func(t *testing.T) {
			if why, ok := conformanceSkipped[sc]; ok {
				t.Skipf("needs the suite's fixtures: %s", why)
			}
			runScenario(t, dir, proxy, sc)
			if t.Failed() && s.Exited() {
				t.Fatalf("crewlet serve exited:\n%s", s.Stderr)
			}
		})
	}
}

// conformanceCLI is the suite's command, relative to conformanceDir.
const conformanceCLI = "node_modules/@modelcontextprotocol/conformance/dist/index.js"

// runScenario runs one scenario against url and fails the test unless the
// suite's every check passed; it logs each check's status either way.
func runScenario(t *testing.T, dir, url, scenario string) {
	t.Helper()
	results := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), conformanceScenarioTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "--import", "./node20.mjs", conformanceCLI, "server", "--url", url, "--scenario", scenario, "-o", results)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	checks := readChecks(t, results)
	for _, c := range checks {
		t.Logf("%s %s: %s %s", c.Status, c.ID, c.Description, c.ErrorMessage)
	}
	if err != nil {
		t.Fatalf("scenario %s failed: %v\n%s", scenario, err, tail(string(out)))
	}
	if len(checks) == 0 {
		t.Fatalf("scenario %s ran no check:\n%s", scenario, tail(string(out)))
	}
	for _, c := range checks {
		if c.Status == "FAILURE" || c.Status == "WARNING" {
			t.Errorf("check %s: %s: %s", c.ID, c.Status, c.ErrorMessage)
		}
	}
}

type conformanceCheck struct {
	ID           string `json:"id"`
	Status       string `json:"status"`
	Description  string `json:"description"`
	ErrorMessage string `json:"errorMessage"`
}

// readChecks reads the checks.json the suite wrote under results.
func readChecks(t *testing.T, results string) []conformanceCheck {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(results, "*", "checks.json"))
	var all []conformanceCheck
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var cs []conformanceCheck
		if err := json.Unmarshal(b, &cs); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		all = append(all, cs...)
	}
	return all
}

// tokenProxy serves s's operator MCP on a loopback URL of its own, adding
// the bearer token the suite's client cannot send. It is otherwise
// transparent: the Host and Origin a request names keep their host names
// and have the proxy's port swapped for Crewlet's, so Crewlet's
// Host/Origin rules (the dns-rebinding-protection scenario) judge what the
// suite sent.
func tokenProxy(t *testing.T, s *Serve) string {
	t.Helper()
	target, err := url.Parse(s.BaseURL)
	if err != nil {
		t.Fatal(err)
	}
	var proxyPort string
	rp := &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = swapPort(r.In.Host, proxyPort, target.Port())
			if o := r.In.Header.Get("Origin"); o != "" {
				if u, err := url.Parse(o); err == nil && u.Host != "" {
					u.Host = swapPort(u.Host, proxyPort, target.Port())
					r.Out.Header.Set("Origin", u.String())
				}
			}
			r.Out.Header.Set("Authorization", "Bearer "+s.Token)
		},
		// Server-sent events go through as they come.
		FlushInterval: -1,
	}
	// The port is known before the proxy serves, so no request reads it
	// while it is written.
	srv := httptest.NewUnstartedServer(rp)
	_, proxyPort, err = net.SplitHostPort(srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL + "/operator/mcp"
}

// swapPort replaces port from with to in a host[:port].
func swapPort(hostport, from, to string) string {
	host, port, err := net.SplitHostPort(hostport)
	if err != nil || port != from {
		return hostport
	}
	return net.JoinHostPort(host, to)
}

// conformanceSuite returns the suite's directory with the pinned suite
// installed (npm ci from the lockfile when it is missing or another
// version; .ci/run installs it up front).
func conformanceSuite(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(conformanceDir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Fatal("node is not on PATH: install Node.js 20 or later with npm; this test runs the official MCP conformance suite")
	}
	if conformanceInstalled(dir) {
		return dir
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("npm ci in %s: %v\n%s", conformanceDir, err, out)
	}
	if !conformanceInstalled(dir) {
		t.Fatalf("npm ci in %s did not install the conformance suite %s", conformanceDir, conformanceVersion)
	}
	return dir
}

func conformanceInstalled(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "package.json"))
	if err != nil {
		return false
	}
	var pkg struct{ Version string }
	return json.Unmarshal(b, &pkg) == nil && pkg.Version == conformanceVersion
}
