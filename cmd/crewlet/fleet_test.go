//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
)

// spawnServe starts `crewlet serve` like StartServe but returns errors
// instead of failing the test, so several can boot at once: a clustered
// node's boot waits for a majority of its peers.
func spawnServe(t testing.TB, bin, dataDir string, extra ...string) (*Serve, error) {
	return spawnServeUntil(t, bin, dataDir, nil, extra...)
}

// spawnServeUntil is spawnServe that gives up, stopping the child, once
// abort is closed.
func spawnServeUntil(t testing.TB, bin, dataDir string, abort <-chan struct{}, extra ...string) (*Serve, error) {
	args := append([]string{"serve", "--data", dataDir, "--http", "127.0.0.1:0", "--log-format", "json"}, extra...)
	cmd := exec.Command(bin, args...)
	s := &Serve{Cmd: cmd, DataDir: dataDir, Stderr: &SyncBuffer{}, done: make(chan struct{})}
	pr, pw := io.Pipe()
	cmd.Stderr = io.MultiWriter(s.Stderr, pw)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		s.waitErr = cmd.Wait()
		pw.Close()
		close(s.done)
	}()
	t.Cleanup(func() {
		_ = s.Cmd.Process.Signal(syscall.SIGCONT)
		s.Kill(t)
	})
	found := make(chan []string, 1)
	taken := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if m := announced(sc.Text()); m != nil {
				found <- m
				break
			}
			if strings.Contains(sc.Text(), "address already in use") {
				select {
				case taken <- sc.Text():
				default:
				}
			}
		}
		io.Copy(io.Discard, pr)
	}()
	select {
	case line := <-taken:
		s.Kill(t)
		return nil, fmt.Errorf("%w: %s", errPortTaken, line)
	case <-abort:
		s.Kill(t)
		return nil, errAborted
	case m := <-found:
		s.URL = m[1]
		s.BaseURL = strings.TrimSuffix(m[1], "/operator/mcp")
		s.TokenFile = m[2]
	case <-s.done:
		return nil, fmt.Errorf("crewlet serve exited before serving: %v\n%s", s.waitErr, s.Stderr)
	case <-time.After(bootTimeout):
		return nil, fmt.Errorf("crewlet serve did not announce its URL in %v:\n%s", bootTimeout, s.Stderr)
	}
	tok, err := os.ReadFile(s.TokenFile)
	if err != nil {
		return nil, err
	}
	s.Token = strings.TrimSpace(string(tok))
	return s, nil
}

// errPortTaken is a child whose listener found its port taken: FreePort
// only knows the ports were free a moment ago, and a second suite running
// at once may take one before the child binds it.
var errPortTaken = errors.New("a port the child was given was taken before it could listen")

// errAborted is a child stopped because another of its fleet failed.
var errAborted = errors.New("stopped: another child of the fleet failed to start")

type childFleet struct {
	bin     string
	dirs    []string
	configs []string
	serves  []*Serve
	// clientURLs are the brokers' client ports (stream.client.listen),
	// opened with the token in tokenFile.
	clientURLs []string
	tokenFile  string
}

// childFleetToken is the brokers' stream.client.token in a child fleet.
const childFleetToken = "child-fleet-client-token"

// startChildFleet writes three cluster configs and boots three `crewlet
// serve` children at once.
func startChildFleet(t *testing.T) *childFleet {
	t.Helper()
	return startChildFleetWith(t, "")
}

// startChildFleetWith is startChildFleet with stream lines added to
// every node's config (two-space indented YAML under stream:).
func startChildFleetWith(t *testing.T, stream string) *childFleet {
	t.Helper()
	for attempt := 1; ; attempt++ {
		f, err := tryChildFleet(t, stream)
		if err == nil {
			return f
		}
		if !errors.Is(err, errPortTaken) || attempt == 3 {
			t.Fatal(err)
		}
		t.Logf("child fleet, attempt %d: %v; again on other ports", attempt, err)
	}
}

// tryChildFleet boots a child fleet on fresh ports, or stops what it
// started and says why not.
func tryChildFleet(t *testing.T, stream string) (*childFleet, error) {
	t.Helper()
	f := &childFleet{bin: BuildBinary(t)}
	root := t.TempDir()
	f.tokenFile = filepath.Join(root, "stream.token")
	if err := os.WriteFile(f.tokenFile, []byte(childFleetToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var routes []string
	var listens []string
	for i := 0; i < 3; i++ {
		l := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		listens = append(listens, l)
		routes = append(routes, "nats://"+l)
	}
	// A cluster name of its own, so a route that reached another suite's
	// server (two suites at once share the free-port pool) is refused.
	name := fmt.Sprintf("childfleet-%d-%d", os.Getpid(), FreePort(t))
	for i := 0; i < 3; i++ {
		dir := filepath.Join(root, fmt.Sprintf("n%d", i+1))
		cfg := filepath.Join(root, fmt.Sprintf("n%d.yaml", i+1))
		client := fmt.Sprintf("127.0.0.1:%d", FreePort(t))
		f.clientURLs = append(f.clientURLs, "nats://"+client)
		// The logs have three replicas unless the lines added say.
		replicas := "  replicas: 3\n"
		if strings.Contains(stream, "replicas:") {
			replicas = ""
		}
		body := fmt.Sprintf("node: {name: n%d}\nstream:\n%s  cluster:\n    name: %s\n    listen: %s\n    routes: [%s]\n  client: {listen: %s, token: %s}\n%s",
			i+1, replicas, name, listens[i], strings.Join(routes, ", "), client, childFleetToken, stream)
		if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		f.dirs = append(f.dirs, dir)
		f.configs = append(f.configs, cfg)
	}
	f.serves = make([]*Serve, 3)
	errs := make([]error, 3)
	// A child whose port was taken stops the others at once: without it
	// they wait out their whole boot for a majority that never comes.
	abort := make(chan struct{})
	var abortOnce sync.Once
	var wg sync.WaitGroup
	for i := 0; i < 3; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			f.serves[i], errs[i] = spawnServeUntil(t, f.bin, f.dirs[i], abort, "--config", f.configs[i])
			if errors.Is(errs[i], errPortTaken) {
				abortOnce.Do(func() { close(abort) })
			}
		}(i)
	}
	wg.Wait()
	failed := -1
	for i, err := range errs {
		// The cause first, rather than a sibling stopped for it.
		if err != nil && (failed < 0 || errors.Is(err, errPortTaken)) {
			failed = i
		}
	}
	if failed < 0 {
		return f, nil
	}
	for _, sv := range f.serves {
		if sv != nil {
			sv.Kill(t)
		}
	}
	return nil, fmt.Errorf("n%d: %w", failed+1, errs[failed])
}

func (f *childFleet) restart(t *testing.T, i int) {
	t.Helper()
	s, err := spawnServe(t, f.bin, f.dirs[i], "--config", f.configs[i])
	if err != nil {
		t.Fatalf("restart n%d: %v", i+1, err)
	}
	f.serves[i] = s
}

// callRetry calls a tool until it answers something other than a refusal
// worth coming back for (broker_unreachable, no_quorum, behind): what a
// client does while the fleet moves a leader off a failed broker.
func callRetry(t *testing.T, c *client.Client, name string, args map[string]any) map[string]any {
	t.Helper()
	return resultObject(callRetryResult(t, c, name, args, callTimeout))
}

// callRetryResult is callRetry's whole result, each call given perCall;
// no_data_node is worth coming back for too (a node without data while
// the data nodes' copies are out of service).
func callRetryResult(t *testing.T, c *client.Client, name string, args map[string]any, perCall time.Duration) *mcpgo.CallToolResult {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), perCall)
		req := mcpgo.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		cancel()
		if err != nil {
			t.Fatalf("%s(%v): %v", name, args, err)
		}
		if !res.IsError {
			return res
		}
		switch resultObject(res)["refused"] {
		case "broker_unreachable", "no_quorum", "behind", "no_data_node":
		default:
			t.Fatalf("%s(%v) answered an error: %s", name, args, resultText(res))
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s(%v) still refused after 60 s: %s", name, args, resultText(res))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// retentionStatus runs `crewlet retention status` against s.
func retentionStatus(t *testing.T, bin string, s *Serve, extra ...string) string {
	t.Helper()
	args := append([]string{"retention", "status", "--node", s.BaseURL, "--token-file", s.TokenFile}, extra...)
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("crewlet %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestChildFleet: three `crewlet serve` processes cluster their brokers
// from their config files; a write on one is read linearizably on the
// others; SIGSTOP of one child and SIGKILL of another (one at a time)
// leave the majority writing, and the stopped and the restarted child
// catch up; `crewlet retention status` names every node with its figures,
// and /api/v1/retention wants the operator token.
func TestChildFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("boots three processes")
	}
	f := startChildFleet(t)
	c1 := f.serves[0].HTTPClient(t)
	Call(t, c1, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	key := createdItem(t, c1, map[string]any{"project": "ENG", "title": "one"})["key"].(string)
	got := Call(t, f.serves[2].HTTPClient(t), "get_work_item", map[string]any{"key": key})
	if got["item"].(map[string]any)["title"] != "one" {
		t.Fatalf("n3 reads %v", got)
	}
	version := func(c *client.Client) float64 {
		return callRetry(t, c, "get_work_item", map[string]any{"key": key})["item"].(map[string]any)["version"].(float64)
	}

	// The route wants the token.
	resp, err := http.Get(f.serves[1].BaseURL + "/api/v1/retention")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("/api/v1/retention without a token = %d, want 401", resp.StatusCode)
	}

	// SIGSTOP n3: the majority writes on; SIGCONT: n3 catches up.
	if err := f.serves[2].Cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	w := callRetry(t, c1, "update_work_item", map[string]any{"key": key, "title": "two", "if_match": version(c1)})
	// Durable on the majority; applied here, or pending while this
	// node's reader moves off the paused broker.
	if w["outcome"] != "applied" && w["outcome"] != "pending" {
		t.Fatalf("write with n3 paused: %v", w)
	}
	if err := f.serves[2].Cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	c3 := f.serves[2].HTTPClient(t)
	got = callRetry(t, c3, "get_work_item", map[string]any{"key": key})
	if got["item"].(map[string]any)["title"] != "two" {
		t.Fatalf("n3 after SIGCONT reads %v", got)
	}

	// SIGKILL n2: the majority writes on; restarted, n2 catches up.
	f.serves[1].Kill(t)
	w = callRetry(t, c1, "update_work_item", map[string]any{"key": key, "title": "three", "if_match": version(c1)})
	if w["outcome"] != "applied" && w["outcome"] != "pending" {
		t.Fatalf("write with n2 killed: %v", w)
	}
	f.restart(t, 1)
	want := version(c1)
	got = callRetry(t, f.serves[1].HTTPClient(t), "get_work_item", map[string]any{"key": key})
	if got["item"].(map[string]any)["title"] != "three" || got["item"].(map[string]any)["version"] != want {
		t.Fatalf("restarted n2 reads %v", got)
	}

	retentionNamesEveryNode(t, f)
	retentionJSONFromRegister(t, f)
}

// retentionNamesEveryNode: crewlet retention status on n1 names every
// node with its figures, once each has beaten.
func retentionNamesEveryNode(t *testing.T, f *childFleet) {
	t.Helper()
	// Every node in the retention answer, with its figures.
	deadline := time.Now().Add(30 * time.Second)
	for {
		out := retentionStatus(t, f.bin, f.serves[0])
		ok := strings.Contains(out, "level: stale") && strings.Contains(out, "APPLIED_THROUGH")
		for _, n := range []string{"n1", "n2", "n3"} {
			ok = ok && strings.Contains(out, "\n"+n+" ")
		}
		if ok && !strings.Contains(out, "not yet") {
			t.Logf("retention status:\n%s", out)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retention status never named every node with a beat:\n%s", out)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// retentionJSONFromRegister: asked of n3 with --json, every node carries
// its tracker figures, read from the register, and who leads its reader:
// its own broker.
func retentionJSONFromRegister(t *testing.T, f *childFleet) {
	t.Helper()
	var a struct {
		Level string `json:"level"`
		Nodes []struct {
			Node    string `json:"node"`
			Domains []struct {
				Domain             string    `json:"domain"`
				Seq                uint64    `json:"seq"`
				AppliedThrough     uint64    `json:"applied_through"`
				StreamCreatedAt    time.Time `json:"stream_created_at"`
				CheckpointStoredAt time.Time `json:"checkpoint_stored_at"`
				Reader             *struct {
					Leader string     `json:"leader"`
					Since  *time.Time `json:"since"`
				} `json:"reader"`
			} `json:"domains"`
		} `json:"nodes"`
	}
	// Asked of another node, the figures come from the register: a node's
	// beat lands every few seconds, so wait for every node's to carry its
	// tracker position and both instants.
	deadline := time.Now().Add(30 * time.Second)
	for {
		a.Nodes = nil
		if err := json.Unmarshal([]byte(retentionStatus(t, f.bin, f.serves[2], "--json")), &a); err != nil {
			t.Fatal(err)
		}
		if a.Level != "stale" || len(a.Nodes) != 3 {
			t.Fatalf("--json: %+v", a)
		}
		problem := ""
		for _, n := range a.Nodes {
			found := false
			for _, d := range n.Domains {
				if d.Domain != "tracker" {
					continue
				}
				found = true
				if d.StreamCreatedAt.IsZero() || d.CheckpointStoredAt.IsZero() || d.Seq == 0 {
					problem = fmt.Sprintf("--json %s: %+v", n.Node, d)
				}
				// Each node's reader is led by its own broker, since the
				// instant it took the lead.
				if d.Reader == nil || d.Reader.Leader != n.Node || d.Reader.Since == nil {
					problem = fmt.Sprintf("--json %s: reader %+v, want led by %s", n.Node, d.Reader, n.Node)
				}
			}
			if !found {
				t.Fatalf("--json %s has no tracker figures: %+v", n.Node, n.Domains)
			}
		}
		if problem == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal(problem)
		}
		time.Sleep(500 * time.Millisecond)
	}
}
