package httpedge_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/internal/httpedge"
)

// TestGuardEmptyTokenFailsClosed: a guard given no token admits nobody,
// whatever the request sends.
func TestGuardEmptyTokenFailsClosed(t *testing.T) {
	h := httpedge.NewGuard(httpedge.GuardOptions{}).Operator(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { t.Error("reached the handler") }))
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, hdr := range []string{"", "Bearer ", "Bearer x"} {
		req, err := http.NewRequest(http.MethodPost, ts.URL, strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		if hdr != "" {
			req.Header.Set("Authorization", hdr)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || m["refused"] != "unauthorized" {
			t.Errorf("%q: status %d %v", hdr, resp.StatusCode, m)
		}
	}
}

// TestPageGuardWantsNoToken: the page guard admits this node's own names
// without a token and refuses a foreign Host or Origin 403, as the guard
// does.
func TestPageGuardWantsNoToken(t *testing.T) {
	h := httpedge.NewGuard(httpedge.GuardOptions{Token: "t"}).Page(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte("page")) }))
	ts := httptest.NewServer(h)
	defer ts.Close()
	for _, c := range []struct {
		host, origin string
		status       int
	}{{"", "", http.StatusOK}, {"evil.example", "", http.StatusForbidden}, {"", "http://evil.example", http.StatusForbidden}} {
		req, err := http.NewRequest(http.MethodGet, ts.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		if c.host != "" {
			req.Host = c.host
		}
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("host %q origin %q: status %d, want %d", c.host, c.origin, resp.StatusCode, c.status)
		}
	}
}
