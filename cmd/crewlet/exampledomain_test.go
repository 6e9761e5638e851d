//go:build integration

package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/domains"
	"github.com/crewlet/crewlet/domains/exampletest"
	"github.com/crewlet/crewlet/mcp"
)

// withNotes is the build's registry and the throwaway notes domain: the
// one line a domain takes.
func withNotes() domains.Registry {
	return append(domains.Builtin(), domains.Of(exampletest.Spec, exampletest.Toolset))
}

// TestADomainIsOneRegistryLine: a domain added to the registry alone
// (domains/exampletest and the line in withNotes) is run by the node and
// served by the real commands, nothing else told of it: over stdio
// (crewlet mcp), on the operator MCP and on the seat MCP (crewlet serve),
// a put_note answers applied and get_note reads it back, as does its REST
// route.
func TestADomainIsOneRegistryLine(t *testing.T) {
	m := &Main{Domains: withNotes()}
	t.Run("stdio", func(t *testing.T) {
		c := inProcessStdio(t, m, filepath.Join(t.TempDir(), "data"))
		putAndGet(t, c, "stdio", true)
	})
	t.Run("serve", func(t *testing.T) {
		base, tok := inProcessServe(t, m, filepath.Join(t.TempDir(), "data"))
		bearer := map[string]string{"Authorization": "Bearer " + tok}
		putAndGet(t, streamableClient(t, base+"/operator/mcp", bearer), "operator", true)
		seat := map[string]string{"Authorization": "Bearer " + tok, mcp.HeaderSeat: "seat-1", mcp.HeaderUnit: "unit-1"}
		putAndGet(t, streamableClient(t, base+"/seat/mcp", seat), "seat", false)
		req, err := http.NewRequest(http.MethodGet, base+"/api/v1/notes/seat", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var got exampletest.NoteRead
		if err := json.NewDecoder(resp.Body).Decode(&got); err != nil || resp.StatusCode != http.StatusOK || got.Note.Text != "written on seat" {
			t.Fatalf("GET /api/v1/notes/seat: %d %+v %v", resp.StatusCode, got, err)
		}
	})
}

// putAndGet writes a note on c and reads it back: the write applied, the
// read sees it. The operator surface's write answers its op_id.
func putAndGet(t *testing.T, c *client.Client, key string, opID bool) {
	t.Helper()
	w := Call(t, c, exampletest.NamePutNote, map[string]any{"key": key, "text": "written on " + key})
	if w["outcome"] != "applied" || opID && w["op_id"] == nil {
		t.Fatalf("%s: put_note answered %v, want applied", key, w)
	}
	r := Call(t, c, exampletest.NameGetNote, map[string]any{"key": key})
	note, _ := r["note"].(map[string]any)
	if note["text"] != "written on "+key || r["level"] != "linearizable" {
		t.Fatalf("%s: get_note answered %v, want the note just written", key, r)
	}
}

// inProcessStdio runs `crewlet mcp --data dir` on m in this process over
// pipes and returns an initialised mcp-go client on its stdin and stdout.
func inProcessStdio(t *testing.T, m *Main, dir string) *client.Client {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cm := *m
	cm.Stdin, cm.Stdout, cm.Stderr = inR, outW, stderr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&MCPCommand{&cm}).Run(ctx, []string{"--data", dir, "--log-format", "json"})
		outW.Close()
	}()
	c := client.NewClient(transport.NewIO(outR, inW, nil))
	t.Cleanup(func() {
		_ = c.Close()
		inW.Close()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("crewlet mcp: %v", err)
		}
		stderr.Close()
	})
	ictx, icancel := context.WithTimeout(context.Background(), bootTimeout)
	defer icancel()
	if err := c.Start(ictx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Initialize(ictx, mcpgo.InitializeRequest{}); err != nil {
		log, _ := os.ReadFile(stderr.Name())
		t.Fatalf("initialize: %v\n%s", err, log)
	}
	return c
}

// inProcessServe runs `crewlet serve --data dir --http 127.0.0.1:0` on m
// in this process and returns its base URL and operator token once it
// serves.
func inProcessServe(t *testing.T, m *Main, dir string) (base, token string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cm := *m
	cm.Stdin, cm.Stdout, cm.Stderr = strings.NewReader(""), io.Discard, w
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- (&ServeCommand{&cm}).Run(ctx, []string{"--data", dir, "--http", "127.0.0.1:0", "--log-format", "json"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("crewlet serve: %v", err)
		}
		w.Close()
		r.Close()
	})
	found := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			if a := announced(sc.Text()); a != nil {
				found <- a
				break
			}
		}
		_, _ = io.Copy(io.Discard, r)
	}()
	select {
	case a := <-found:
		tok, err := os.ReadFile(a[2])
		if err != nil {
			t.Fatal(err)
		}
		return strings.TrimSuffix(a[1], "/operator/mcp"), strings.TrimSpace(string(tok))
	case err := <-done:
		t.Fatalf("crewlet serve stopped before serving: %v", err)
	case <-time.After(bootTimeout):
		t.Fatalf("crewlet serve did not announce its URL in %v", bootTimeout)
	}
	return "", ""
}
