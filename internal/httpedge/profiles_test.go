package httpedge_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/crewlet/crewlet/internal/httpedge"
)

// TestProfilesBehindToken: WithProfiles answers a CPU profile (gzipped
// protobuf, as go tool pprof reads it) and the profiles' index to the
// operator's token only, and leaves every other path to the node's own
// handler.
func TestProfilesBehindToken(t *testing.T) {
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("node")) })
	ts := httptest.NewServer(httpedge.WithProfiles(next, httpedge.NewGuard(httpedge.GuardOptions{Token: "t"})))
	defer ts.Close()
	get := func(path, token string) (int, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, b
	}
	for _, tok := range []string{"", "wrong"} {
		if code, _ := get("/debug/pprof/profile?seconds=1", tok); code != http.StatusUnauthorized {
			t.Errorf("a profile with token %q answered %d, want 401", tok, code)
		}
	}
	if code, body := get("/debug/pprof/", "t"); code != http.StatusOK || !bytes.Contains(body, []byte("goroutine")) {
		t.Errorf("the index answered %d: %.200s", code, body)
	}
	code, body := get("/debug/pprof/profile?seconds=1", "t")
	if code != http.StatusOK {
		t.Fatalf("the CPU profile answered %d: %.200s", code, body)
	}
	zr, err := gzip.NewReader(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("the CPU profile is not gzipped: %v", err)
	}
	if raw, err := io.ReadAll(zr); err != nil || len(raw) == 0 {
		t.Errorf("the CPU profile decompressed to %d bytes: %v", len(raw), err)
	}
	if code, body := get("/metrics", ""); code != http.StatusOK || string(body) != "node" {
		t.Errorf("another path answered %d %q, want the node's handler", code, body)
	}
}
