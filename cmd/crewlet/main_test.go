//go:build integration

package main

// End-to-end tests of the built binary. The binary is built once per test
// run (BuildBinary); StartServe runs `crewlet serve` on a data directory
// and returns where it listens and its token, so other tests (a SIGKILL
// and restart test, for one) can drive a real process.

import (
	"bufio"
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
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/internal/loopback"
	"github.com/crewlet/crewlet/internal/token"
	"github.com/crewlet/crewlet/tools"
)

// Timeouts of the end-to-end tests: boots include an embedded broker and
// run under -race on small machines.
const (
	bootTimeout = 90 * time.Second
	callTimeout = 60 * time.Second
	stopTimeout = 30 * time.Second
)

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// BuildBinary builds ./cmd/crewlet once per test run (with -race when the
// tests run with it) and returns the binary's path.
func BuildBinary(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("end-to-end: skipped in -short mode")
	}
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "crewlet-e2e-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "crewlet")
		args := []string{"build", "-o", binPath}
		if raceEnabled {
			args = append(args, "-race")
		}
		cmd := exec.Command("go", append(args, ".")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// outside the ephemeral range (so no connection of a suite running beside
// this one takes it before the child binds it), and that no earlier call
// in this process returned.
func FreePort(t testing.TB) int {
	t.Helper()
	ports, err := loopback.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	return ports[0]
}

// Serve is one running `crewlet serve`.
type Serve struct {
	Cmd       *exec.Cmd
	DataDir   string
	BaseURL   string // http://127.0.0.1:PORT
	URL       string // the operator MCP: BaseURL + "/operator/mcp"
	Token     string
	TokenFile string
	Stderr    *SyncBuffer // everything the process wrote on stderr

	waitOnce sync.Once
	waitErr  error
	done     chan struct{}
}

// opIDPattern is an operation id: a version 7 UUID, then .<verb>-<object>.
var opIDPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}\.[a-z_]+-\S+$`)

var serveLine = regexp.MustCompile(`operator MCP at (http://\S+/operator/mcp) \(bearer token in ([^)]+)\)`)

// announced reads where `crewlet serve` says it serves from one line of
// its stderr: the "serving" log line in a JSON log, the line in words
// otherwise. m is [line, operator MCP URL, token file] when it is one.
func announced(line string) (m []string) {
	var l struct {
		Msg         string `json:"msg"`
		OperatorMCP string `json:"operator_mcp"`
		Token       string `json:"token"`
	}
	if json.Unmarshal([]byte(line), &l) == nil {
		if l.Msg == "serving" && l.OperatorMCP != "" {
			return []string{line, l.OperatorMCP, l.Token}
		}
		return nil
	}
	return serveLine.FindStringSubmatch(line)
}

// StartServe runs `crewlet serve --data dataDir --http 127.0.0.1:0` (plus
// extra flags), waits for /healthz and returns the running process; it is
// stopped at the end of the test if still running.
func StartServe(t testing.TB, dataDir string, extra ...string) *Serve {
	t.Helper()
	bin := BuildBinary(t)
	args := append([]string{"serve", "--data", dataDir, "--http", "127.0.0.1:0", "--log-format", "json"}, extra...)
	cmd := exec.Command(bin, args...)
	s := &Serve{Cmd: cmd, DataDir: dataDir, Stderr: &SyncBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(s.Stderr, pw)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.waitErr = cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	t.Cleanup(func() {
		s.Kill(t)
		if t.Failed() {
			// What the node did, for a failure that only a loaded
			// machine shows.
			t.Logf("crewlet serve's log, its end:\n%s", tail(s.Stderr.String()))
		}
	})

	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := announced(sc.Text()); m != nil {
				found <- m
				break
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case m := <-found:
		s.URL = m[1]
		s.BaseURL = strings.TrimSuffix(m[1], "/operator/mcp")
		s.TokenFile = m[2]
	case <-s.done:
		t.Fatalf("crewlet serve exited before serving: %v\n%s", s.waitErr, s.Stderr)
	case <-time.After(bootTimeout):
		t.Fatalf("crewlet serve did not announce its URL in %v:\n%s", bootTimeout, s.Stderr)
	}
	tok, err := os.ReadFile(s.TokenFile)
	if err != nil {
		t.Fatalf("token file: %v", err)
	}
	s.Token = strings.TrimSpace(string(tok))
	deadline := time.Now().Add(bootTimeout)
	for {
		resp, err := http.Get(s.BaseURL + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("/healthz not ready: %v\n%s", err, s.Stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Exited reports whether the process has exited.
func (s *Serve) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Wait waits for the process to exit and returns its error.
func (s *Serve) Wait(t testing.TB, timeout time.Duration) error {
	t.Helper()
	select {
	case <-s.done:
		return s.waitErr
	case <-time.After(timeout):
		t.Fatalf("crewlet serve still running after %v:\n%s", timeout, s.Stderr)
		return nil
	}
}

// Stop sends SIGTERM and waits for a clean exit.
func (s *Serve) Stop(t testing.TB) {
	t.Helper()
	if s.Exited() {
		return
	}
	_ = s.Cmd.Process.Signal(syscall.SIGTERM)
	if err := s.Wait(t, stopTimeout); err != nil {
		t.Fatalf("crewlet serve exited with %v after SIGTERM:\n%s", err, s.Stderr)
	}
}

// Kill sends SIGKILL and waits for the process to be gone.
func (s *Serve) Kill(t testing.TB) {
	t.Helper()
	if s.Exited() {
		return
	}
	_ = s.Cmd.Process.Kill()
	<-s.done
}

// SyncBuffer is a bytes.Buffer safe for one writer and many readers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// HTTPClient is an mcp-go Streamable HTTP client on s's operator MCP,
// initialised; it is closed at the end of the test.
func (s *Serve) HTTPClient(t testing.TB) *client.Client {
	t.Helper()
	return streamableClient(t, s.URL, map[string]string{"Authorization": "Bearer " + s.Token})
}

// streamableClient is mcp-go's client over Streamable HTTP at url,
// started and initialized.
func streamableClient(t testing.TB, url string, headers map[string]string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(url, transport.WithHTTPHeaders(headers))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	return c
}

// StdioClient starts `crewlet <args>` as an MCP stdio server and returns an
// initialised client on it; closing it closes the child's stdin.
func StdioClient(t testing.TB, args ...string) *client.Client {
	t.Helper()
	bin := BuildBinary(t)
	c, err := client.NewStdioMCPClient(bin, nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	if _, err := c.Initialize(ctx, mcpgo.InitializeRequest{}); err != nil {
		t.Fatalf("initialize crewlet %s: %v\nstderr:\n%s", strings.Join(args, " "), err, stdioStderr(c))
	}
	return c
}

func stdioStderr(c *client.Client) string {
	r, ok := client.GetStderr(c)
	if !ok {
		return "(no stderr)"
	}
	done := make(chan []byte, 1)
	go func() {
		var buf bytes.Buffer
		_, _ = io.Copy(&buf, io.LimitReader(r, 1<<20))
		done <- buf.Bytes()
	}()
	select {
	case b := <-done:
		return string(b)
	case <-time.After(2 * time.Second):
		return "(stderr still open)"
	}
}

// Call calls tool name with args and returns its structured content; a
// transport error or an isError result fails the test.
func Call(t testing.TB, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = name
	req.Params.Arguments = args
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s(%v): %v", name, args, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v) answered an error: %s", name, args, resultText(res))
	}
	m, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s(%v): structured content is %T, want an object: %s", name, args, res.StructuredContent, resultText(res))
	}
	return m
}

// resultText is a result's text contents: the answer or the refusal
// object as JSON.
func resultText(res *mcpgo.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcpgo.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, " | ")
}

// resultObject is a result's JSON object: a success's structured content,
// or a refusal's object (tools.RefusalOf); nil for neither.
func resultObject(res *mcpgo.CallToolResult) map[string]any {
	if res.IsError {
		m, _ := tools.RefusalOf(res)
		return m
	}
	m, _ := res.StructuredContent.(map[string]any)
	return m
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// exerciseTracker creates a project and an item through c and reads them
// back, checking the answers' shapes on the way.
func exerciseTracker(t *testing.T, c *client.Client, project string) {
	t.Helper()
	p := Call(t, c, "create_project", map[string]any{"key": project, "name": "Engineering " + project})
	if p["outcome"] != "applied" {
		t.Fatalf("create_project outcome = %v, want applied: %s", p["outcome"], mustJSON(p))
	}
	if id, _ := p["op_id"].(string); !opIDPattern.MatchString(id) {
		t.Errorf("create_project op_id = %q, want <uuid v7>.<verb>-<object>", id)
	}
	if _, ok := p["position"].(string); !ok {
		t.Errorf("create_project answer has no position token: %s", mustJSON(p))
	}

	item := createdItem(t, c, map[string]any{"project": project, "title": "First item of " + project})
	key, _ := item["key"].(string)
	if key != project+"-1" {
		t.Fatalf("create_work_item key = %q, want %s-1: %s", key, project, mustJSON(item))
	}

	g := Call(t, c, "get_work_item", map[string]any{"key": key})
	if g["level"] != "linearizable" {
		t.Errorf("get_work_item level = %v, want linearizable: %s", g["level"], mustJSON(g))
	}
	if !strings.Contains(mustJSON(g), "First item of "+project) {
		t.Errorf("get_work_item does not carry the title: %s", mustJSON(g))
	}

	l := Call(t, c, "list_work_items", map[string]any{"project": project})
	if !strings.Contains(mustJSON(l), `"`+key+`"`) {
		t.Errorf("list_work_items does not list %s: %s", key, mustJSON(l))
	}
	ps := Call(t, c, "list_projects", map[string]any{})
	if !strings.Contains(mustJSON(ps), `"`+project+`"`) {
		t.Errorf("list_projects does not list %s: %s", project, mustJSON(ps))
	}
}

func TestServeHTTP(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	checkHealthz(t, s)
	checkTokenFile(t, s, dir)
	checkGuard(t, s)
	checkOperatorTools(t, s)

	s.Stop(t)
	// The token is reused on the next boot.
	s2 := StartServe(t, dir)
	if s2.Token != s.Token {
		t.Errorf("second boot token differs from the first")
	}
	s2.Stop(t)
}

// checkHealthz: /healthz answers "ok" without a token.
func checkHealthz(t *testing.T, s *Serve) {
	t.Helper()
	resp, err := http.Get(s.BaseURL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "ok" {
		t.Fatalf("/healthz = %d %q", resp.StatusCode, body)
	}
}

// checkTokenFile: the operator token was minted into the data directory,
// 32 bytes of hex, readable by its owner only.
func checkTokenFile(t *testing.T, s *Serve, dir string) {
	t.Helper()
	if s.TokenFile != filepath.Join(dir, token.FileName) {
		t.Errorf("token file = %q, want %q", s.TokenFile, filepath.Join(dir, token.FileName))
	}
	fi, err := os.Stat(s.TokenFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode = %v, want 0600", fi.Mode().Perm())
	}
	if len(s.Token) != 64 {
		t.Errorf("token %q is not 32 bytes of hex", s.Token)
	}
}

// operatorPost posts a tools/list to the operator MCP with header and
// returns the status it answers.
func operatorPost(t *testing.T, s *Serve, header map[string]string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", s.URL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

// checkGuard: the operator MCP refuses a missing or wrong token, a
// foreign Origin and a foreign Host, and every route but /healthz wants
// the token.
func checkGuard(t *testing.T, s *Serve) {
	t.Helper()
	if code := operatorPost(t, s, nil); code != http.StatusUnauthorized {
		t.Errorf("/operator/mcp without a token = %d, want 401", code)
	}
	if code := operatorPost(t, s, map[string]string{"Authorization": "Bearer wrong"}); code != http.StatusUnauthorized {
		t.Errorf("/operator/mcp with a wrong token = %d, want 401", code)
	}
	if code := operatorPost(t, s, map[string]string{"Authorization": "Bearer " + s.Token, "Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Errorf("/operator/mcp with a foreign Origin = %d, want 403", code)
	}
	req, _ := http.NewRequest("POST", s.URL, strings.NewReader(`{}`))
	req.Host = "evil.example"
	req.Header.Set("Authorization", "Bearer "+s.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("/operator/mcp with a foreign Host = %d, want 403", resp.StatusCode)
		}
	}
	if resp, err := http.Get(s.BaseURL + "/nothing-here"); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("an unknown route without a token = %d, want 401 (every route but /healthz wants the token)", resp.StatusCode)
		}
	}
}

// checkOperatorTools: over HTTP with the token, the operator's tools are
// listed and the tracker answers.
func checkOperatorTools(t *testing.T, s *Serve) {
	t.Helper()
	c := s.HTTPClient(t)
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	tl, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, tool := range tl.Tools {
		names[tool.Name] = true
	}
	for _, want := range []string{"create_project", "create_work_item", "get_work_item", "list_work_items", "list_projects"} {
		if !names[want] {
			t.Errorf("tools/list lacks %s (has %v)", want, names)
		}
	}
	exerciseTracker(t, c, "OPS")
}

func TestMCPStdioEmbedded(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	c := StdioClient(t, "mcp", "--data", dir, "--log-format", "json")
	exerciseTracker(t, c, "ENG")
	// Closing stdin (and stderr, as mcp-go's client does) ends the child
	// cleanly: it closes its node and exits 0.
	if err := c.Close(); err != nil {
		t.Errorf("crewlet mcp did not exit cleanly when its client went away: %v", err)
	}
	// Once the client has gone the directory is free again: a second
	// process opens it and sees the first one's writes.
	c2 := StdioClient(t, "mcp", "--data", dir, "--log-format", "json")
	g := Call(t, c2, "get_work_item", map[string]any{"key": "ENG-1"})
	if !strings.Contains(mustJSON(g), "First item of ENG") {
		t.Errorf("after restart get_work_item = %s", mustJSON(g))
	}
}

func TestMCPRefusedWhileServeHolds(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), bootTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, BuildBinary(t), "mcp", "--data", dir, "--log-format", "json")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("second crewlet mcp on a held directory: %v, want a non-zero exit\nstderr:\n%s", err, stderr.String())
	}
	if ctx.Err() != nil {
		t.Fatalf("second crewlet mcp did not exit by itself")
	}
	if ee.ExitCode() != 1 {
		t.Errorf("exit code = %d, want 1", ee.ExitCode())
	}
	if !strings.Contains(stderr.String(), "--node") {
		t.Errorf("refusal does not mention --node:\n%s", stderr.String())
	}
	if stdout.Len() != 0 {
		t.Errorf("refusal wrote to stdout (the protocol's): %q", stdout.String())
	}
	if s.Exited() {
		t.Fatalf("serve died:\n%s", s.Stderr)
	}
}

func TestMCPRemoteNode(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	c := StdioClient(t, "mcp", "--node", s.URL, "--token-file", s.TokenFile, "--log-format", "json")
	exerciseTracker(t, c, "WEB")

	// The writes went to serve's node: the operator MCP sees them.
	h := s.HTTPClient(t)
	g := Call(t, h, "get_work_item", map[string]any{"key": "WEB-1"})
	if !strings.Contains(mustJSON(g), "First item of WEB") {
		t.Errorf("serve does not see the remote write: %s", mustJSON(g))
	}
}

func TestUsageErrors(t *testing.T) {
	bin := BuildBinary(t)
	for _, args := range [][]string{
		{"frobnicate"},
		{"serve", "--mode", "paused"},
		{"mcp", "--node", "http://127.0.0.1:1/operator/mcp"},   // no token
		{"mcp", "--join", "http://127.0.0.1:1"},                // not a broker URL
		{"mcp", "--join", "nats://127.0.0.1:1", "--data", "d"}, // a node without data holds none
		{"mcp", "--join", "nats://127.0.0.1:1"},                // nobody listens
	} {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), token.EnvOperator+"=")
		out, err := cmd.CombinedOutput()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() == 0 {
			t.Errorf("crewlet %v: %v, want a non-zero exit\n%s", args, err, out)
		}
	}
}
