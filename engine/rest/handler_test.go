package rest_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/rest"
)

// fakeGuard admits an operator request carrying X-Op, and a page request
// carrying X-Page; it refuses 401 otherwise, as the edge's guard does.
type fakeGuard struct{}

func (fakeGuard) Operator(next http.Handler) http.Handler { return wants("X-Op", next) }
func (fakeGuard) Page(next http.Handler) http.Handler     { return wants("X-Page", next) }

func wants(header string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(header) == "" {
			http.Error(w, `{"refused":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func text(s string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, s) })
}

// TestHandlerMountsEveryRouteOneWay: one Handler serves every kind of
// route behind the guard its Access names: an open route wants nothing, a
// page route the page rule, everything else the operator rule; a JSON GET
// route answers 405 to another method and a POST route only its method;
// a path under /api/v1/ no route takes is not_found with the read routes
// listed; Count sees what is behind the operator guard, its refusals too.
func TestHandlerMountsEveryRouteOneWay(t *testing.T) {
	counted := 0
	h := rest.Handler(rest.Config{
		Guard: fakeGuard{},
		Count: func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { counted++; next.ServeHTTP(w, r) })
		},
		Routes: []rest.Route{
			{Pattern: "/healthz", Access: rest.Open, Handler: text("ok")},
			{Method: http.MethodGet, Pattern: "/ui/", Access: rest.Page, Handler: text("page")},
			{Pattern: "/operator/mcp", Handler: text("mcp")},
			{Method: http.MethodGet, Pattern: "/api/v1/things/{id}", Grammar: true, Serve: func(_ context.Context, q *rest.Query) (any, error) {
				return map[string]any{"id": q.Path("id"), "level": q.Read.Level}, nil
			}},
			{Method: http.MethodPost, Pattern: "/api/v1/things/{id}/purge", OpID: &rest.OpID{Tool: "purge_thing", Arg: "id"}, Serve: func(context.Context, *rest.Query) (any, error) {
				return nil, engine.Refuse(engine.CodeNoQuorum, "no quorum")
			}},
		},
	})
	ts := httptest.NewServer(h)
	defer ts.Close()
	do := func(method, path, header string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, ts.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if header != "" {
			req.Header.Set(header, "1")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	refused := func(body string) string {
		var m map[string]any
		_ = json.Unmarshal([]byte(body), &m)
		s, _ := m["refused"].(string)
		return s
	}
	for _, c := range []struct {
		method, path, header string
		status               int
		want                 string
	}{
		{"GET", "/healthz", "", 200, "ok"},
		{"GET", "/ui/", "", 401, "unauthorized"},
		{"GET", "/ui/", "X-Page", 200, "page"},
		{"GET", "/ui/", "X-Op", 401, "unauthorized"},
		{"POST", "/operator/mcp", "", 401, "unauthorized"},
		{"POST", "/operator/mcp", "X-Op", 200, "mcp"},
		{"GET", "/api/v1/things/a?read_level=linearizable", "X-Op", 200, `"level":"linearizable"`},
		{"GET", "/api/v1/things/a?colour=red", "X-Op", 400, "invalid_argument"},
		{"POST", "/api/v1/things/a", "X-Op", 405, "invalid_argument"},
		{"POST", "/api/v1/things/a/purge", "X-Op", 503, "no_quorum"},
		{"POST", "/api/v1/things/a/purge?extra=1", "X-Op", 400, "invalid_argument"},
		{"GET", "/api/v1/things/a/purge", "X-Op", 404, "/api/v1/things/{id}."},
		{"GET", "/api/v1/nothing", "", 401, "unauthorized"},
	} {
		status, body := do(c.method, c.path, c.header)
		if status != c.status || !strings.Contains(body, c.want) && refused(body) != c.want {
			t.Errorf("%s %s (%s): %d %s, want %d %s", c.method, c.path, c.header, status, body, c.status, c.want)
		}
	}
	if counted == 0 {
		t.Error("Count saw nothing behind the operator guard")
	}
	before := counted
	do("GET", "/healthz", "")
	do("GET", "/ui/", "X-Page")
	if counted != before {
		t.Error("Count saw a route outside the operator guard")
	}
}
