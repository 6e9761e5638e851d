//go:build integration

package main

// End-to-end tests of the HTTP edge on a real `crewlet serve`: body and
// connection caps, http.allowed_hosts, owner-only files, /readyz and a
// JSON log that is JSON on every line.

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/httpedge/edgetest"
	"github.com/crewlet/crewlet/internal/token"
)

// atOnce is how long an answer that must not wait for its request's body
// may take: well inside the server's read timeout, when a server waiting
// for the body would give up.
const atOnce = httpedge.DefaultReadTimeout / 2

// writeConfig writes a config file for one test and returns its path.
func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "crewlet.yaml")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func (s *Serve) addr() string { return strings.TrimPrefix(s.BaseURL, "http://") }

// rawAnswer is edgetest.RawAnswer's status and JSON body.
func rawAnswer(t *testing.T, addr, head string, wait time.Duration) (int, map[string]any) {
	t.Helper()
	resp, body := edgetest.RawAnswer(t, addr, head, wait)
	return resp.StatusCode, body
}

func rawHead(method, path, host string, header ...string) string {
	return edgetest.Head(method, path, host, header...)
}

// peakRSS is the process's high-water resident set (VmHWM) in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM: %q", line)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM in /proc status")
	return 0
}

// TestServeBodyCap: a body over http.max_body_bytes (the 4 MiB default)
// is refused 413 too_large with a coded JSON body on every route, token
// or not, on its declared length alone (the body is withheld); a chunked
// 400 MiB body sent with the token is cut at the cap and refused the
// same way, and the node's peak resident memory does not grow by
// anything like the body; without the token the guard refuses it 401
// without reading it.
func TestServeBodyCap(t *testing.T) {
	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	const huge = 400 << 20
	for _, path := range []string{"/operator/mcp", "/seat/mcp", "/api/v1/projects", "/api/v1/work-items/ENG-1/purge", "/healthz", "/readyz", "/nothing-here"} {
		for _, withToken := range []bool{false, true} {
			hdr := []string{fmt.Sprintf("Content-Length: %d", huge), "Content-Type: application/json"}
			if withToken {
				hdr = append(hdr, "Authorization: Bearer "+s.Token)
			}
			code, body := rawAnswer(t, s.addr(), rawHead("POST", path, s.addr(), hdr...), atOnce)
			if code != http.StatusRequestEntityTooLarge || body["refused"] != httpedge.CodeTooLarge || !strings.Contains(fmt.Sprint(body["message"]), "http.max_body_bytes") {
				t.Errorf("POST %s, %d bytes declared, token %v: %d %v", path, huge, withToken, code, body)
			}
		}
	}

	before := peakRSS(t, s.Cmd.Process.Pid)
	post := func(withToken bool) (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest("POST", s.URL, &edgetest.Zeros{N: huge})
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if withToken {
			req.Header.Set("Authorization", "Bearer "+s.Token)
		}
		resp, err := (&http.Client{Timeout: callTimeout}).Do(req)
		if err != nil {
			t.Fatalf("chunked %d bytes, token %v: %v", huge, withToken, err)
		}
		defer resp.Body.Close()
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		return resp.StatusCode, m
	}
	if code, m := post(true); code != http.StatusRequestEntityTooLarge || m["refused"] != httpedge.CodeTooLarge {
		t.Errorf("chunked %d bytes with the token: %d %v", huge, code, m)
	}
	if code, m := post(false); code != http.StatusUnauthorized || m["refused"] != "unauthorized" {
		t.Errorf("chunked %d bytes without the token: %d %v", huge, code, m)
	}
	after := peakRSS(t, s.Cmd.Process.Pid)
	t.Logf("peak RSS (VmHWM) of crewlet serve (race build %v): %.1f MiB booted, %.1f MiB after the %d MiB bodies (+%.1f MiB)",
		raceEnabled, float64(before)/(1<<20), float64(after)/(1<<20), huge>>20, float64(after-before)/(1<<20))
	// Buffered whole, the body alone would add 400 MiB.
	if grew := after - before; grew > huge/4 {
		t.Errorf("peak RSS grew by %d MiB for a body the cap refuses", grew>>20)
	}
	// The node still serves.
	exerciseTracker(t, s.HTTPClient(t), "BIG")
}

// TestServeConnectionCap: with http.max_connections 4, eight connections
// that send nothing fill the cap and queue behind it; the node closes
// them (its read-header timeout) and still answers /healthz and an
// authorised request queued behind them. A caller without a token that
// declares a body and sends none is refused 401 on its headers.
func TestServeConnectionCap(t *testing.T) {
	// Mostly waiting (boots, faults, idle timeouts): it runs beside the
	// package's other long tests.
	t.Parallel()
	const max, silent = 4, 8
	s := StartServe(t, filepath.Join(t.TempDir(), "data"), "--config", writeConfig(t, fmt.Sprintf("http: {max_connections: %d}\n", max)))
	var idle []net.Conn
	for i := 0; i < silent; i++ {
		c, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		idle = append(idle, c)
	}
	// Two rounds of shedding at most: the silent connections go in turn.
	wait := 2*httpedge.DefaultReadHeaderTimeout + callTimeout
	code, _ := rawAnswer(t, s.addr(), rawHead("GET", "/healthz", s.addr(), "Connection: close"), wait)
	if code != http.StatusOK {
		t.Fatalf("/healthz behind %d silent connections: %d", silent, code)
	}
	code, body := rawAnswer(t, s.addr(), rawHead("GET", "/api/v1/projects", s.addr(), "Connection: close", "Authorization: Bearer "+s.Token), wait)
	if code != http.StatusOK || body["level"] != "stale" {
		t.Fatalf("an authorised read behind %d silent connections: %d %v", silent, code, body)
	}
	for i, c := range idle {
		_ = c.SetReadDeadline(time.Now().Add(wait))
		if n, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Fatalf("silent connection %d: read %d, %v; want it closed by the node", i, n, err)
		}
	}
	code, body = rawAnswer(t, s.addr(), rawHead("POST", "/operator/mcp", s.addr(), "Content-Length: 1000", "Content-Type: application/json"), atOnce)
	if code != http.StatusUnauthorized || body["refused"] != "unauthorized" {
		t.Fatalf("a slow body without a token: %d %v", code, body)
	}
	if !strings.Contains(s.Stderr.String(), `"msg":"http_connections_at_cap"`) {
		t.Errorf("no http_connections_at_cap line")
	}
}

// TestServeAllowedHosts: a node behind a reverse proxy answers the names
// in http.allowed_hosts, on the operator MCP and the REST path alike (a
// bare name on any port, host:port on that port only), and refuses
// others 403; without the key the same names are refused.
func TestServeAllowedHosts(t *testing.T) {
	cfg := writeConfig(t, "http:\n  allowed_hosts: [crewlet.example.com, \"proxy.example.net:8443\"]\n")
	s := StartServe(t, filepath.Join(t.TempDir(), "data"), "--config", cfg)
	get := func(s *Serve, path, host, origin string) int {
		t.Helper()
		hdr := []string{"Connection: close", "Authorization: Bearer " + s.Token, "Accept: application/json, text/event-stream", "Content-Type: application/json"}
		if origin != "" {
			hdr = append(hdr, "Origin: "+origin)
		}
		method, body := "GET", ""
		if path == "/operator/mcp" {
			method = "POST"
			body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"proxy","version":"0"}}}`
			hdr = append(hdr, fmt.Sprintf("Content-Length: %d", len(body)))
		}
		c, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(callTimeout))
		if _, err := io.WriteString(c, rawHead(method, path, host, hdr...)+body); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, path := range []string{"/operator/mcp", "/api/v1/projects"} {
		for _, tc := range []struct {
			host, origin string
			want         int
		}{
			{"crewlet.example.com", "", http.StatusOK},
			{"crewlet.example.com:443", "https://crewlet.example.com", http.StatusOK},
			{"CREWLET.example.com", "", http.StatusOK},
			{"proxy.example.net:8443", "https://proxy.example.net:8443", http.StatusOK},
			{"proxy.example.net:9000", "", http.StatusForbidden},
			{"proxy.example.net", "", http.StatusForbidden},
			{"evil.example", "", http.StatusForbidden},
			{"crewlet.example.com", "https://evil.example", http.StatusForbidden},
			{s.addr(), "", http.StatusOK},
		} {
			if got := get(s, path, tc.host, tc.origin); got != tc.want {
				t.Errorf("%s with Host %s, Origin %q: %d, want %d", path, tc.host, tc.origin, got, tc.want)
			}
		}
	}
	s.Stop(t)
	strict := StartServe(t, filepath.Join(t.TempDir(), "data"))
	for _, path := range []string{"/operator/mcp", "/api/v1/projects"} {
		if got := get(strict, path, "crewlet.example.com", ""); got != http.StatusForbidden {
			t.Errorf("%s with Host crewlet.example.com and no allowed_hosts: %d, want 403", path, got)
		}
	}
}

// TestServeFilesOwnerOnly: every file and directory a booted node has
// created — the data directory, the replicated database and its -wal and
// -shm, the broker's store tree, the token, the lock — is its owner's
// only, although the test (and so the child) starts with the usual 022
// umask.
func TestServeFilesOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	exerciseTracker(t, s.HTTPClient(t), "OWN")
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // the broker removed it meanwhile
			}
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		seen[rel] = true
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s is %v: group or others can reach it", rel, fi.Mode())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{".", "crewlet-replicated.db", "crewlet-replicated.db-wal", token.FileName, "stream", filepath.Join("stream", "jetstream")} {
		if !seen[want] {
			t.Errorf("no %s in the data directory (saw %d entries)", want, len(seen))
		}
	}
}

// TestServeReadyz: /readyz wants no token; it answers 200 while the node
// serves and 503 maintenance, coded, in a capacity window. (Stalled and
// evicted nodes are produced for real in internal/httpedge.)
func TestServeReadyz(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	s := StartServe(t, dir)
	ready := func(s *Serve) (int, map[string]any) {
		t.Helper()
		resp, err := http.Get(s.BaseURL + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatalf("/readyz is not JSON: %v", err)
		}
		return resp.StatusCode, m
	}
	if code, m := ready(s); code != http.StatusOK || m["ready"] != true {
		t.Fatalf("a serving node: %d %v", code, m)
	}
	s.Stop(t)
	s = StartServe(t, dir, "--mode", "maintenance")
	if code, m := ready(s); code != http.StatusServiceUnavailable || m["refused"] != "maintenance" || m["ready"] != false || m["message"] == "" {
		t.Fatalf("a node in maintenance: %d %v", code, m)
	}
	if resp, err := http.Get(s.BaseURL + "/healthz"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz stays liveness: %v %v", resp, err)
	}
}

// TestServeJSONLog: in a JSON log every line on stderr is a JSON object
// with a component: the boot (the broker's banner among it), the line
// saying where the node serves (in place of the words a terminal gets),
// refusals, bad requests, a refused body, the shutdown, and the failure
// of a serve that cannot start.
func TestServeJSONLog(t *testing.T) {
	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	c := s.HTTPClient(t)
	exerciseTracker(t, c, "LOG")
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "get_work_item", map[string]any{"key": "NOPE-1"}
	if _, err := c.CallTool(ctx, req); err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{
		rawHead("GET", "/api/v1/projects", s.addr()),                                         // no token
		rawHead("GET", "/api/v1/projects", "evil.example", "Authorization: Bearer "+s.Token), // foreign Host
		rawHead("POST", "/operator/mcp", s.addr(), "Content-Length: 999999999"),              // too large
		"GARBAGE / HTTP/9.9\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", // a TLS hello on the plain port
		"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n",
		rawHead("GET", "/%zz", s.addr()),
	} {
		conn, err := net.Dial("tcp", s.addr())
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(callTimeout))
		_, _ = io.WriteString(conn, raw)
		// Said all it has to say: the node answers what it got and closes.
		_ = conn.(*net.TCPConn).CloseWrite()
		_, _ = io.Copy(io.Discard, conn)
		conn.Close()
	}
	s.Stop(t)

	// A serve that cannot start: its port is taken.
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	cmd := exec.Command(BuildBinary(t), "serve", "--data", filepath.Join(t.TempDir(), "data"), "--http", taken.Addr().String(), "--log-format", "json")
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("serve on a taken port: %v, want exit 1\n%s", err, out)
	}

	for name, log := range map[string]string{"a serving node": s.Stderr.String(), "a failed start": string(out)} {
		lines := strings.Split(strings.TrimSpace(log), "\n")
		msgs := map[string]bool{}
		for _, line := range lines {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Errorf("%s: a line on stderr is not JSON: %q", name, line)
				continue
			}
			if c, _ := m["component"].(string); c == "" {
				t.Errorf("%s: a line has no component: %q", name, line)
			}
			msgs[fmt.Sprint(m["msg"])] = true
		}
		t.Logf("%s: %d lines, all JSON", name, len(lines))
		want := []string{"serving", "http_request_refused", "shutting down"}
		if name == "a failed start" {
			want = []string{"command_failed"}
		}
		for _, w := range want {
			if !msgs[w] {
				t.Errorf("%s: no %s line", name, w)
			}
		}
	}
}
