package rest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/crewlet/crewlet/engine"
)

// Guard stands in front of routes by their Access: the HTTP edge's guard
// (httpedge.Guard) in a node.
type Guard interface {
	// Operator admits a request carrying the operator's token from this
	// node's own Host and Origin names.
	Operator(next http.Handler) http.Handler
	// Page admits a request from this node's own Host and Origin names.
	Page(next http.Handler) http.Handler
}

// Config is a node's whole HTTP surface: its routes and what stands in
// front of them.
type Config struct {
	Routes []Route
	// Guard guards the Operator and Page routes; nil guards nothing (a
	// test's handler, or one mounted behind a guard of its own).
	Guard Guard
	// Count wraps everything behind the operator guard, the guard
	// included, so it sees each of their answers (the refusals counted by
	// surface); nil: nothing is counted.
	Count func(http.Handler) http.Handler
	// Logger receives the internal errors, which the caller is told only
	// as internal.
	Logger *slog.Logger
}

// Handler mounts cfg's routes, the one way every route of a node is
// mounted: the Open routes as they are, the Page routes behind the
// guard's Host and Origin rules, and every other route behind the whole
// operator guard, where a path under /api/v1/ that no route takes is
// answered not_found with the read routes listed.
func Handler(cfg Config) http.Handler {
	s := &server{log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With(engine.LogComponent, engine.ComponentHTTP)
	root, operator := http.NewServeMux(), http.NewServeMux()
	var reads []string
	for _, rt := range cfg.Routes {
		h := s.handler(rt)
		switch rt.Access {
		case Open:
			root.Handle(pattern(rt), h)
		case Page:
			root.Handle(pattern(rt), guarded(cfg.Guard, Page, h))
		default:
			operator.Handle(pattern(rt), h)
		}
		if rt.Serve != nil && rt.Method == http.MethodGet {
			reads = append(reads, rt.Pattern)
		}
	}
	operator.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, engine.Refuse(engine.CodeNotFound, "there is no read route %s; the routes are %s.", r.URL.Path, strings.Join(reads, ", ")))
	})
	h := guarded(cfg.Guard, Operator, operator)
	if cfg.Count != nil {
		h = cfg.Count(h)
	}
	root.Handle("/", h)
	return root
}

// pattern is the route's pattern as the mux takes it. A JSON GET route is
// mounted for every method, so that another method is told, as JSON,
// that the read path changes nothing (serve); every other route with a
// method is mounted for that method alone.
func pattern(rt Route) string {
	if rt.Method == "" || rt.Serve != nil && rt.Method == http.MethodGet {
		return rt.Pattern
	}
	return rt.Method + " " + rt.Pattern
}

func guarded(g Guard, a Access, h http.Handler) http.Handler {
	switch {
	case g == nil:
		return h
	case a == Page:
		return g.Page(h)
	}
	return g.Operator(h)
}

type server struct {
	log *slog.Logger
}

// handler is one route's handler: its own, or its JSON answer.
func (s *server) handler(rt Route) http.Handler {
	if rt.Handler != nil {
		return rt.Handler
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if rt.Method == http.MethodGet && r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, engine.Refuse(engine.CodeInvalidArgument, "%s answers GET only; the read path changes nothing.", r.URL.Path).Object())
			return
		}
		q, err := parse(r, rt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		ctx := r.Context()
		if rt.Method == http.MethodPost {
			// Every write route is behind the operator's token.
			ctx = engine.WithActor(ctx, "operator")
		}
		ans, err := rt.Serve(ctx, q)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		writeJSON(w, http.StatusOK, ans)
	})
}

// fail answers a refusal with its code's status, anything else internal
// (the detail goes to the log only).
func (s *server) fail(w http.ResponseWriter, r *http.Request, err error) {
	if ref, ok := engine.AsRefusal(err); ok {
		s.refuse(w, r, ref)
		return
	}
	if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
		return // the caller went away
	}
	s.log.ErrorContext(r.Context(), "http_internal_error", "path", r.URL.Path, engine.LogErr, err.Error())
	s.refuse(w, r, engine.RefuseDoc(engine.CodeInternal))
}

func (s *server) refuse(w http.ResponseWriter, _ *http.Request, ref *engine.Refusal) {
	if ref.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ref.RetryAfter))))
	}
	writeJSON(w, engine.HTTPStatus(ref.Code), ref.Object())
}

// bodies are response buffers reused across requests: a body is encoded
// into one and written from it, not marshalled into a new slice and
// copied again to end it with a newline.
var bodies = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledBody is the largest buffer put back: a rare large answer's
// buffer is left to the collector rather than held.
const maxPooledBody = 64 << 10

func writeJSON(w http.ResponseWriter, status int, v any) {
	buf := bodies.Get().(*bytes.Buffer)
	defer func() {
		if buf.Cap() <= maxPooledBody {
			buf.Reset()
			bodies.Put(buf)
		}
	}()
	buf.Reset()
	// Encode writes what json.Marshal returns, and the newline.
	if err := json.NewEncoder(buf).Encode(v); err != nil {
		status = http.StatusInternalServerError
		buf.Reset()
		fmt.Fprintf(buf, `{"refused":%q,"message":%q}`+"\n", engine.CodeInternal, engine.Codes[engine.CodeInternal].Doc)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}
