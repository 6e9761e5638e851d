//go:build integration

package main

// TestTypeScriptSDKClients drives the official MCP TypeScript SDK clients
// (1.x, @modelcontextprotocol/sdk, and 2.x, @modelcontextprotocol/client,
// pinned in testdata/tsclient/package.json) and mcp-go's client against
// the real binary on every MCP surface: `crewlet mcp` over stdio, and
// `crewlet serve`'s /operator/mcp and /seat/mcp over Streamable HTTP.
// Every tool is called once with arguments it takes and once with
// arguments it refuses. The TypeScript SDK 1.x validates structured
// content against the tool's output schema even on an error result and
// throws -32602 on a mismatch, so a refusal carrying its object as
// structured content never reached the model; this test is what shows
// the wire form (tools/result.go) works on every official client.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/mcp"
	"github.com/crewlet/crewlet/surfaces"
	"github.com/crewlet/crewlet/tools"
	"github.com/crewlet/crewlet/tools/fleettools"
	"github.com/crewlet/crewlet/tools/kbtools"
	"github.com/crewlet/crewlet/tools/trackertools"
	"github.com/crewlet/crewlet/tools/turntools"
	"github.com/crewlet/crewlet/tools/usagetools"
)

// harnessDir holds harness.mjs, its package.json and the committed
// package-lock.json; node_modules is installed there (npm ci) when
// missing.
const harnessDir = "testdata/tsclient"

// harnessTimeout bounds one client's whole run: boot, tools/list and
// every step, under -race on a loaded machine.
const harnessTimeout = 4 * time.Minute

// step is one call of a plan: the tool, its arguments (${VAR} is a plan
// variable or a value an earlier step saved), and what it must answer:
// "ok" or a refusal code. Save names values of a success to keep, by
// dotted path. OperatorOnly steps are left out of the seat's plan.
type step struct {
	Tool         string            `json:"tool"`
	Args         map[string]any    `json:"args"`
	Expect       string            `json:"expect"`
	Save         map[string]string `json:"save,omitempty"`
	OperatorOnly bool              `json:"-"`
	// SeatOnly steps (a turn's start and end) are left out of the
	// operator's plans.
	SeatOnly bool `json:"-"`
}

const expectOK = "ok"

// steps call every tool of the operator surface once with arguments it
// takes and once with arguments it refuses. A refused call never repeats
// an accepted one's arguments: on the seat surface the same call in the
// same unit of work is the same operation, answered as the first.
// A write may answer pending (durable, not yet applied here) on a loaded
// machine, so versions and ids come from reads, never from a create's
// answer, and a refusal that depends on an earlier write (already_exists,
// stale, deleted) comes after a read: a read here is linearizable, so it
// waits until this node has applied every write acknowledged before it.
func steps() []step {
	s := func(tool string, args map[string]any, expect string) step {
		return step{Tool: tool, Args: args, Expect: expect}
	}
	op := func(st step) step { st.OperatorOnly = true; return st }
	save := func(st step, save map[string]string) step { st.Save = save; return st }
	none := "${P}-999"
	start, end := turnSteps()
	return slices.Concat(start, append([]step{
		s(trackertools.NameCreateProject, map[string]any{"key": "${P}", "name": "Alpha ${P}"}, expectOK),
		s(trackertools.NameCreateProject, map[string]any{"key": "${Q}", "name": "Beta ${Q}"}, expectOK),
		s(trackertools.NameListProjects, map[string]any{}, expectOK),
		s(trackertools.NameListProjects, map[string]any{"colour": "red"}, "invalid_argument"),
		s(trackertools.NameCreateProject, map[string]any{"key": "${P}", "name": "Alpha again"}, "already_exists"),
		// The answer's text is the whole answer: description, tags and all.
		s(trackertools.NameCreateWorkItem, map[string]any{"project": "${P}", "title": "First of ${P}",
			"description": "Line one\nline two: émoji 😀, <b>markup</b> & \"quotes\"\n\tindented", "tags": []any{"bug", "ui"}}, expectOK),
		s(trackertools.NameCreateWorkItem, map[string]any{"project": "${P}", "title": "Second of ${P}"}, expectOK),
		s(trackertools.NameCreateWorkItem, map[string]any{"project": "${P}", "title": "Third of ${P}", "parent": "${P}-1"}, expectOK),
		s(trackertools.NameCreateWorkItem, map[string]any{"project": "${NOPROJECT}", "title": "Nowhere"}, "not_found"),
		save(s(trackertools.NameGetWorkItem, map[string]any{"key": "${P}-1"}, expectOK), map[string]string{"V": "item.version"}),
		s(trackertools.NameGetWorkItem, map[string]any{"key": none}, "not_found"),
		s(trackertools.NameListWorkItems, map[string]any{"project": "${P}"}, expectOK),
		s(trackertools.NameListWorkItems, map[string]any{"project": "${P}", "limit": 0}, "invalid_argument"),
		s(trackertools.NameListTags, map[string]any{"project": "${P}"}, expectOK),
		s(trackertools.NameListTags, map[string]any{"project": "p"}, "invalid_argument"),
		s(trackertools.NameSearchWorkItems, map[string]any{"query": "First"}, expectOK),
		// A NUL byte in a query answered internal once (an SQL error).
		s(trackertools.NameSearchWorkItems, map[string]any{"query": "First\x00"}, "invalid_argument"),
		s(trackertools.NameUpdateWorkItem, map[string]any{"key": "${P}-1", "if_match": "${V}", "title": "First of ${P}, renamed"}, expectOK),
		s(trackertools.NameGetWorkItem, map[string]any{"key": "${P}-1"}, expectOK),
		s(trackertools.NameUpdateWorkItem, map[string]any{"key": "${P}-1", "if_match": "${V}", "title": "A lost update"}, "stale"),
		s(trackertools.NameCommentOnWorkItem, map[string]any{"key": "${P}-1", "body": "Looks good.\nShip it."}, expectOK),
		s(trackertools.NameCommentOnWorkItem, map[string]any{"key": none, "body": "Nobody reads this."}, "not_found"),
		s(trackertools.NameMoveWorkItem, map[string]any{"key": "${P}-3", "project": "${Q}"}, expectOK),
		s(trackertools.NameMoveWorkItem, map[string]any{"key": none, "project": "${Q}"}, "not_found"),
		s(trackertools.NameMergeWorkItems, map[string]any{"into": "${P}-1", "duplicates": []any{"${P}-2"}}, expectOK),
		s(trackertools.NameMergeWorkItems, map[string]any{"into": "${P}-1", "duplicates": []any{"${P}-1"}}, "invalid_argument"),
		s(trackertools.NameTrashWorkItem, map[string]any{"key": "${P}-2"}, expectOK),
		s(trackertools.NameTrashWorkItem, map[string]any{"key": none}, "not_found"),
		s(trackertools.NameListWorkItems, map[string]any{"project": "${P}", "status": "open"}, expectOK),
		s(trackertools.NameRestoreWorkItem, map[string]any{"key": "${P}-2"}, expectOK),
		s(trackertools.NameRestoreWorkItem, map[string]any{"key": none}, "not_found"),
		op(s(trackertools.NamePurgeWorkItem, map[string]any{"key": "${P}-2"}, expectOK)),
		op(s(trackertools.NameGetWorkItem, map[string]any{"key": "${P}-2"}, "deleted")),
		op(s(trackertools.NamePurgeWorkItem, map[string]any{"key": "${P}-2"}, "deleted")),

		s(kbtools.NameCreateSpace, map[string]any{"key": "${S}", "name": "Docs ${S}"}, expectOK),
		s(kbtools.NameListSpaces, map[string]any{}, expectOK),
		s(kbtools.NameListSpaces, map[string]any{"space": "${S}"}, "invalid_argument"),
		s(kbtools.NameCreateSpace, map[string]any{"key": "${S}", "name": "Docs again"}, "already_exists"),
		s(kbtools.NameUpdateSpace, map[string]any{"key": "${S}", "name": "Docs ${S}, renamed"}, expectOK),
		s(kbtools.NameUpdateSpace, map[string]any{"key": "${S}", "if_match": 999999, "name": "A lost rename"}, "stale"),
		s(kbtools.NameCreatePage, map[string]any{"space": "${S}", "title": "Runbook", "body": "Restart node-3 with care.\n\n- drain\n- restart"}, expectOK),
		s(kbtools.NameCreatePage, map[string]any{"space": "${NOPROJECT}", "title": "Nowhere"}, "not_found"),
		save(s(kbtools.NameListPages, map[string]any{"space": "${S}"}, expectOK), map[string]string{"PAGE": "pages.0.id"}),
		s(kbtools.NameListPages, map[string]any{"space": "${S}", "limit": 0}, "invalid_argument"),
		save(s(kbtools.NameGetPage, map[string]any{"id": "${PAGE}"}, expectOK), map[string]string{"PV": "page.version"}),
		s(kbtools.NameGetPage, map[string]any{"id": "pg_00000000000000000000000000000000"}, "not_found"),
		s(kbtools.NameUpdatePage, map[string]any{"id": "${PAGE}", "if_match": "${PV}", "body": "Restart node-3 only after draining it."}, expectOK),
		s(kbtools.NameGetPage, map[string]any{"id": "${PAGE}"}, expectOK),
		s(kbtools.NameUpdatePage, map[string]any{"id": "${PAGE}", "if_match": "${PV}", "body": "A lost edit"}, "stale"),
		s(kbtools.NameSearchKnowledge, map[string]any{"query": "Restart"}, expectOK),
		s(kbtools.NameSearchKnowledge, map[string]any{"query": "()"}, "invalid_argument"),
	}, kbLifeSteps()...), []step{
		op(s(kbtools.NamePurgePage, map[string]any{"id": "${PAGE}"}, expectOK)),
		op(s(kbtools.NameGetPage, map[string]any{"id": "${PAGE}"}, "deleted")),
		op(s(kbtools.NamePurgePage, map[string]any{"id": "${PAGE}"}, "deleted")),
	}, fleetSteps(), similarSteps(), lifeSteps(), end)
}

// fleetSteps are the operator's fleet and usage tools (operator only).
func fleetSteps() []step {
	op := func(tool string, args map[string]any, expect string) step {
		return step{Tool: tool, Args: args, Expect: expect, OperatorOnly: true}
	}
	return []step{
		op(fleettools.NameRetentionStatus, map[string]any{}, expectOK),
		op(fleettools.NameRetentionStatus, map[string]any{"level": "stale"}, "invalid_argument"),
		op(usagetools.NameUsageReport, map[string]any{}, expectOK),
		op(usagetools.NameUsageReport, map[string]any{"from": "2026-13-01"}, "invalid_argument"),
		// A name no node has: the gate is written all the same, and
		// touches nobody here.
		op(fleettools.NameEvictNode, map[string]any{"node": "ghost-${GHOST}"}, expectOK),
		op(fleettools.NameEvictNode, map[string]any{"node": "no such node!"}, "invalid_argument"),
		op(fleettools.NameReadmitNode, map[string]any{"node": "ghost-${GHOST}"}, expectOK),
		op(fleettools.NameReadmitNode, map[string]any{"node": "ghost\nnode"}, "invalid_argument"),
	}
}

// similarSteps call the duplicate finder before a create (title and
// description) and about a filed item (key), and with neither.
func similarSteps() []step {
	s := func(tool string, args map[string]any, expect string) step {
		return step{Tool: tool, Args: args, Expect: expect}
	}
	return []step{
		s(trackertools.NameSimilarWorkItems, map[string]any{"title": "First of ${P}", "description": "line two, émoji"}, expectOK),
		s(trackertools.NameSimilarWorkItems, map[string]any{"key": "${P}-1", "limit": 3}, expectOK),
		s(trackertools.NameSimilarWorkItems, map[string]any{"description": "neither a title nor a key"}, "invalid_argument"),
	}
}

// turnSteps are a seat's turn around the plan (seat only): started first,
// with a knowledge block, ended last.
func turnSteps() (start, end []step) {
	seat := func(tool string, args map[string]any, expect string) step {
		return step{Tool: tool, Args: args, Expect: expect, SeatOnly: true}
	}
	return []step{
			seat(turntools.NameStartTurn, map[string]any{"query": "Runbook restart", "knowledge_limit": 3}, expectOK),
			seat(turntools.NameStartTurn, map[string]any{"trigger_position": "CREWLET_TRACKER_LOG@1:99999999"}, "invalid_argument"),
		}, []step{
			seat(turntools.NameEndTurn, map[string]any{"outcome": "done", "summary": "Every tool called."}, expectOK),
			seat(turntools.NameEndTurn, map[string]any{"outcome": "failed"}, "conflict"),
		}
}

// kbLifeSteps are the knowledge base's lifecycle calls, on the page and
// space steps() made, before its purge.
func kbLifeSteps() []step {
	s := func(tool string, args map[string]any, expect string) step {
		return step{Tool: tool, Args: args, Expect: expect}
	}
	return []step{
		s(kbtools.NameGetSpace, map[string]any{"key": "${S}"}, expectOK),
		s(kbtools.NameGetSpace, map[string]any{"key": "${NOPROJECT}"}, "not_found"),
		s(kbtools.NameGetPage, map[string]any{"title": "Runbook", "space": "${S}"}, expectOK),
		s(kbtools.NameListPageVersions, map[string]any{"id": "${PAGE}", "limit": 1}, expectOK),
		s(kbtools.NameListPageVersions, map[string]any{"id": "pg_00000000000000000000000000000000"}, "not_found"),
		{Tool: kbtools.NameCommentOnPage, Args: map[string]any{"id": "${PAGE}", "body": "Needs a diagram."}, Expect: expectOK, Save: map[string]string{"CM": "comment.id"}},
		s(kbtools.NameCommentOnPage, map[string]any{"id": "${PAGE}", "comment_id": "${CM}", "delete": true}, expectOK),
		s(kbtools.NameCommentOnPage, map[string]any{"id": "${PAGE}", "delete": true}, "invalid_argument"),
		s(kbtools.NameUpdatePage, map[string]any{"id": "${PAGE}", "trashed": true}, expectOK),
		s(kbtools.NameUpdatePage, map[string]any{"id": "${PAGE}", "trashed": false}, expectOK),
	}
}

// surface is one MCP surface of the binary, as the plans reach it.
type surface struct {
	name  string
	tools tools.Surface
	// transport is the plan's transport for one client run, whose tag
	// keeps its keys and its unit of work apart from the other runs.
	transport func(t *testing.T, tag string) planTransport
	// goClient is mcp-go's client on the surface for one run.
	goClient func(t *testing.T, tag string) *client.Client
}

type planTransport struct {
	Kind    string            `json:"kind"` // stdio or http
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
}

type plan struct {
	SDK       string         `json:"sdk"`
	Transport planTransport  `json:"transport"`
	Vars      map[string]any `json:"vars"`
	Steps     []step         `json:"steps"`
}

// report is what a run answers, the harness's and the Go runner's alike.
type report struct {
	SDK      string   `json:"sdk"`
	Protocol string   `json:"protocol"`
	Tools    []string `json:"tools"`
	Results  []result `json:"results"`
	Fatal    string   `json:"fatal"`
}

type result struct {
	I      int    `json:"i"`
	Tool   string `json:"tool"`
	Expect string `json:"expect"`
	Pass   bool   `json:"pass"`
	Detail string `json:"detail"`
}

func TestTypeScriptSDKClients(t *testing.T) {
	// Mostly waiting (boots, faults, idle timeouts): it runs beside the
	// package's other long tests.
	t.Parallel()
	if testing.Short() {
		t.Skip("end-to-end: skipped in -short mode")
	}
	// Node first: without it the test fails at once, saying what to install.
	dir := nodeHarness(t)
	bin := BuildBinary(t)
	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	surfaces := surfacesOf(bin, s)
	// What no SDK sends: raw bytes that are not UTF-8, off the wire. The
	// seat surface is stateless, so one POST is one call.
	t.Run("seat/raw-bytes", func(t *testing.T) { rawBytesRefused(t, s) })

	for _, sf := range surfaces {
		want := toolNames(sf.tools)
		var planned []step
		for _, st := range steps() {
			if sf.tools == tools.Seat && st.OperatorOnly || sf.tools != tools.Seat && st.SeatOnly {
				continue
			}
			planned = append(planned, st)
		}
		for _, sdk := range []string{"v1", "v2", "go"} {
			t.Run(sf.name+"/"+sdk, func(t *testing.T) {
				// One tag per run: the operator and seat runs share a node.
				tag := strings.ToUpper(sf.name[:2] + sdk)
				p := plan{SDK: sdk, Vars: map[string]any{"P": tag + "A", "Q": tag + "B", "S": tag + "D", "NOPROJECT": tag + "Z", "GHOST": strings.ToLower(tag)}, Steps: planned}
				var rep report
				if sdk == "go" {
					rep = runGo(t, sf.goClient(t, tag), p)
				} else {
					p.Transport = sf.transport(t, tag)
					rep = runHarness(t, dir, p)
				}
				checkReport(t, want, planned, rep)
				if t.Failed() && s.Exited() {
					t.Fatalf("crewlet serve exited:\n%s", s.Stderr)
				}
			})
		}
	}
}

// surfacesOf is the binary's three MCP surfaces: stdio (a crewlet mcp of
// its own per run), and the operator and seat surfaces of s.
func surfacesOf(bin string, s *Serve) []surface {
	httpTransport := func(url string, headers map[string]string) planTransport {
		return planTransport{Kind: "http", URL: url, Headers: headers}
	}
	return []surface{
		{
			name: "stdio", tools: tools.Operator,
			transport: func(t *testing.T, tag string) planTransport {
				return planTransport{Kind: "stdio", Command: bin, Args: []string{"mcp", "--data", filepath.Join(t.TempDir(), "data"), "--log-format", "json"}}
			},
			goClient: func(t *testing.T, tag string) *client.Client {
				return StdioClient(t, "mcp", "--data", filepath.Join(t.TempDir(), "data"), "--log-format", "json")
			},
		},
		{
			name: "operator", tools: tools.Operator,
			transport: func(t *testing.T, tag string) planTransport {
				return httpTransport(s.URL, map[string]string{"Authorization": "Bearer " + s.Token})
			},
			goClient: func(t *testing.T, tag string) *client.Client {
				return streamableClient(t, s.URL, map[string]string{"Authorization": "Bearer " + s.Token})
			},
		},
		{
			name: "seat", tools: tools.Seat,
			transport: func(t *testing.T, tag string) planTransport {
				return httpTransport(s.BaseURL+"/seat/mcp", seatHeaders(s, tag))
			},
			goClient: func(t *testing.T, tag string) *client.Client {
				return streamableClient(t, s.BaseURL+"/seat/mcp", seatHeaders(s, tag))
			},
		},
	}
}

// seatHeaders are a seat run's headers: the operator token, and a seat
// and unit of work of the run's own.
func seatHeaders(s *Serve, tag string) map[string]string {
	return map[string]string{"Authorization": "Bearer " + s.Token, mcp.HeaderSeat: "seat-" + strings.ToLower(tag), mcp.HeaderUnit: "unit-" + strings.ToLower(tag)}
}

// rawBytesRefused: a call whose arguments are not UTF-8 is refused
// invalid_argument, as a tool result.
func rawBytesRefused(t *testing.T, s *Serve) {
	body := []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_work_items","arguments":{"query":"login` + "\xff\xfe" + `page"}}}`)
	req, err := http.NewRequest(http.MethodPost, s.BaseURL+"/seat/mcp", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range seatHeaders(s, "raw") {
		req.Header.Set(k, v)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var rpc struct {
		Result json.RawMessage `json:"result"`
	}
	payload := raw
	if i := bytes.Index(raw, []byte("data: ")); i >= 0 {
		payload = bytes.TrimSpace(raw[i+len("data: "):])
	}
	var res mcpgo.CallToolResult
	if err := json.Unmarshal(payload, &rpc); err != nil || json.Unmarshal(rpc.Result, &res) != nil {
		t.Fatalf("%d %s: not a tool result: %v", resp.StatusCode, raw, err)
	}
	obj, isRefusal := tools.RefusalOf(&res)
	if msg, _ := obj["message"].(string); !isRefusal || obj["refused"] != "invalid_argument" || !strings.Contains(msg, "not valid UTF-8") {
		t.Fatalf("raw bytes that are not UTF-8: %s", raw)
	}
}

// toolNames are the tools a surface of a data node offers.
func toolNames(s tools.Surface) []string {
	var names []string
	for _, d := range surfaces.Catalogue(domains.Builtin()).Definitions(s, tools.Filter{}) {
		names = append(names, d.Name)
	}
	slices.Sort(names)
	return names
}

// checkReport fails the test for each step that did not answer as
// planned, and unless the client listed exactly the surface's tools and
// saw every one of them both answer and refuse.
func checkReport(t *testing.T, want []string, planned []step, rep report) {
	t.Helper()
	if rep.Fatal != "" {
		t.Fatalf("%s client: %s", rep.SDK, rep.Fatal)
	}
	t.Logf("%s client, protocol %q: %d tools, %d steps", rep.SDK, rep.Protocol, len(rep.Tools), len(rep.Results))
	listed := slices.Sorted(slices.Values(rep.Tools))
	if !slices.Equal(listed, want) {
		t.Errorf("tools/list = %v, want %v", listed, want)
	}
	if len(rep.Results) != len(planned) {
		t.Fatalf("%d results for %d steps", len(rep.Results), len(planned))
	}
	answered, refused := map[string]bool{}, map[string]bool{}
	for _, r := range rep.Results {
		if !r.Pass {
			t.Errorf("step %d %s(%s) want %s: %s", r.I, r.Tool, mustJSON(planned[r.I].Args), r.Expect, r.Detail)
			continue
		}
		if r.Expect == expectOK {
			answered[r.Tool] = true
		} else {
			refused[r.Tool] = true
		}
	}
	for _, name := range want {
		if !answered[name] || !refused[name] {
			t.Errorf("%s: answered %v, refused %v; every tool must do both", name, answered[name], refused[name])
		}
	}
}

// runHarness runs harness.mjs on p with node and returns its report.
func runHarness(t *testing.T, dir string, p plan) report {
	t.Helper()
	var rep report
	runNodeScript(t, dir, "harness.mjs", p.SDK, p, &rep)
	return rep
}

// runNodeScript runs `node script plan.json` in dir with p as the plan and
// decodes the JSON report it prints on stdout into rep; the script's
// stderr (the stdio child's logs among it) is shown when the test fails.
func runNodeScript(t *testing.T, dir, script, sdk string, p, rep any) {
	t.Helper()
	planFile := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(planFile, []byte(mustJSON(p)), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), harnessTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", script, planFile)
	cmd.Dir = dir
	var stdout bytes.Buffer
	stderr := &SyncBuffer{}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node %s (%s): %v\nstdout:\n%s\nstderr:\n%s", script, sdk, err, stdout.String(), tail(stderr.String()))
	}
	if err := json.Unmarshal(stdout.Bytes(), rep); err != nil {
		t.Fatalf("%s report: %v\nstdout:\n%s\nstderr:\n%s", script, err, stdout.String(), tail(stderr.String()))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("%s %s stderr (the stdio child's logs among it):\n%s", sdk, script, tail(stderr.String()))
		}
	})
}

func tail(s string) string {
	const max = 8 << 10
	if len(s) > max {
		return "…" + s[len(s)-max:]
	}
	return s
}

var varRef = regexp.MustCompile(`\$\{([A-Z_]+)\}`)

// expand is harness.mjs's expand: ${VAR} in every string of v replaced by
// its value; a string that is exactly one reference takes the value as it
// is (a number stays a number).
func expand[T any](v T, vars map[string]any) (T, error) {
	var missing error
	var walk func(any) any
	walk = func(x any) any {
		switch x := x.(type) {
		case string:
			if m := varRef.FindStringSubmatch(x); m != nil && m[0] == x {
				val, has := vars[m[1]]
				if !has {
					missing = fmt.Errorf("no value for ${%s}", m[1])
				}
				return val
			}
			return varRef.ReplaceAllStringFunc(x, func(ref string) string {
				name := ref[2 : len(ref)-1]
				val, has := vars[name]
				if !has {
					missing = fmt.Errorf("no value for ${%s}", name)
				}
				return fmt.Sprint(val)
			})
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = walk(e)
			}
			return out
		case map[string]any:
			out := make(map[string]any, len(x))
			for k, e := range x {
				out[k] = walk(e)
			}
			return out
		}
		return x
	}
	out, _ := walk(any(v)).(T)
	return out, missing
}

// at reads a dotted path ("page.version", "pages.0.id").
func at(v any, path string) any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[k]
		case []any:
			i, err := strconv.Atoi(k)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}

// The pinned SDKs, as package.json names them.
var harnessPins = map[string]string{
	"@modelcontextprotocol/sdk":    "1.32.2",
	"@modelcontextprotocol/client": "2.4.0",
}

var (
	harnessOnce sync.Once
	harnessErr  error
)

// nodeHarness returns the harness directory with its pinned packages
// installed, installing them (npm ci, from the committed lockfile) once
// per test run when they are missing or not the pinned versions. Node.js
// 20 or later must be on PATH: the test fails, never skips, without it.
func nodeHarness(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(harnessDir)
	if err != nil {
		t.Fatal(err)
	}
	harnessOnce.Do(func() { harnessErr = installHarness(dir) })
	if harnessErr != nil {
		t.Fatal(harnessErr)
	}
	return dir
}

func installHarness(dir string) error {
	const needNode = "install Node.js 20 or later (with npm) and put node on PATH: this test drives the official MCP TypeScript SDK clients"
	out, err := exec.Command("node", "--version").Output()
	if err != nil {
		return fmt.Errorf("node --version: %v; %s", err, needNode)
	}
	v := strings.TrimPrefix(strings.TrimSpace(string(out)), "v")
	major, err := strconv.Atoi(strings.SplitN(v, ".", 2)[0])
	if err != nil || major < 20 {
		return fmt.Errorf("node is %q; %s", strings.TrimSpace(string(out)), needNode)
	}
	if installedPins(dir) == nil {
		return nil
	}
	if _, err := exec.LookPath("npm"); err != nil {
		return fmt.Errorf("npm is not on PATH; %s", needNode)
	}
	// npm ci runs in a scratch directory beside the harness and its
	// node_modules is renamed into place: a rename is atomic, so a test
	// run beside this one (another go test of the same tree) either sees
	// no node_modules or a whole one, and the loser of two installs
	// keeps the winner's.
	scratch, err := os.MkdirTemp(dir, ".install-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	for _, f := range []string{"package.json", "package-lock.json"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(scratch, f), b, 0o644); err != nil {
			return err
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund")
	cmd.Dir = scratch
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("npm ci in %s: %v\n%s", harnessDir, err, out)
	}
	modules := filepath.Join(dir, "node_modules")
	if _, err := os.Stat(modules); err == nil {
		// Present but not the pinned versions: move it aside first.
		stale := filepath.Join(scratch, "stale")
		if err := os.Rename(modules, stale); err != nil && installedPins(dir) != nil {
			return fmt.Errorf("replace %s: %w", modules, err)
		}
	}
	if err := os.Rename(filepath.Join(scratch, "node_modules"), modules); err != nil {
		if pinErr := installedPins(dir); pinErr != nil {
			return errors.Join(fmt.Errorf("install %s: %w", modules, err), pinErr)
		}
	}
	return installedPins(dir)
}

// installedPins reports whether node_modules holds the pinned SDKs.
func installedPins(dir string) error {
	for name, want := range harnessPins {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(name), "package.json"))
		if err != nil {
			return fmt.Errorf("%s is not installed in %s", name, harnessDir)
		}
		var pkg struct{ Version string }
		if err := json.Unmarshal(b, &pkg); err != nil || pkg.Version != want {
			return fmt.Errorf("%s in %s is %q, not the pinned %s", name, harnessDir, pkg.Version, want)
		}
	}
	return nil
}
