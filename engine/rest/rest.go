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
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/crewlet/crewlet/engine"
)

// Config is what the read path serves: its routes (every domain's and
// the replication answer's, RoutesOf the node's services) and where an
// internal error is logged.
type Config struct {
	Routes []Route
	Logger *slog.Logger
}

// ReadRouter is a service that offers read routes: a domain's service,
// the replication answer.
type ReadRouter interface {
	ReadRoutes() []Route
}

// RoutesOf collects the read routes of every service that offers some, in
// the order given.
func RoutesOf(services ...any) []Route {
	var out []Route
	for _, s := range services {
		if rr, ok := s.(ReadRouter); ok {
			out = append(out, rr.ReadRoutes()...)
		}
	}
	return out
}

// Route is one GET route. Pattern is a net/http path pattern under
// /api/v1/; Keys are the query keys it takes besides the read grammar;
// Grammar says whether it takes the grammar at all (a replication answer
// does not: its level is derived, never chosen).
type Route struct {
	Pattern string
	Grammar bool
	Keys    []string
	Serve   func(ctx context.Context, q *Query) (any, error)
}

// The read grammar's keys.
const (
	KeyReadLevel     = "read_level"
	KeyMinPosition   = "min_position"
	KeyMaxLagSeq     = "max_lag_seq"
	KeyMaxLagSeconds = "max_lag_seconds"
)

var grammarKeys = []string{KeyReadLevel, KeyMinPosition, KeyMaxLagSeq, KeyMaxLagSeconds}

// DefaultLevel is the REST read path's level when the caller names none.
const DefaultLevel = engine.Stale

// Handler serves cfg's routes under /api/v1/.
func Handler(cfg Config) http.Handler {
	s := &server{log: cfg.Logger}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.log = s.log.With(engine.LogComponent, engine.ComponentHTTP)
	mux := http.NewServeMux()
	var patterns []string
	for _, rt := range cfg.Routes {
		mux.Handle(rt.Pattern, s.serve(rt))
		patterns = append(patterns, rt.Pattern)
	}
	mux.HandleFunc("/api/v1/", func(w http.ResponseWriter, r *http.Request) {
		s.refuse(w, r, engine.Refuse(engine.CodeNotFound, "there is no read route %s; the routes are %s.", r.URL.Path, strings.Join(patterns, ", ")))
	})
	return mux
}

type server struct {
	log *slog.Logger
}

// Query is one request's parsed query: the read options from the grammar
// and the route's own keys, each given at most once.
type Query struct {
	Read engine.ReadOptions
	req  *http.Request
	vals url.Values
}

// Has reports whether key was given.
func (q *Query) Has(key string) bool { _, ok := q.vals[key]; return ok }

// Str is key's value, "" when absent.
func (q *Query) Str(key string) string { return q.vals.Get(key) }

// Path is a path wildcard's value.
func (q *Query) Path(name string) string { return q.req.PathValue(name) }

var decimalRE = regexp.MustCompile(`^(0|[1-9][0-9]*)$`)

// Int parses key as a decimal integer in [lo, hi]; def when absent.
func (q *Query) Int(key string, lo, hi, def int) (int, error) {
	if !q.Has(key) {
		return def, nil
	}
	v := q.Str(key)
	n, err := strconv.Atoi(v)
	if !decimalRE.MatchString(v) || err != nil || n < lo || n > hi {
		return 0, invalid(key, "%s=%q is not a whole number from %d to %d.", key, v, lo, hi)
	}
	return n, nil
}

func invalid(key, format string, args ...any) *engine.Refusal {
	return engine.Refuse(engine.CodeInvalidArgument, format, args...).With("key", key)
}

// parse reads the query strictly: no unknown key, no key twice, no empty
// value, and the grammar as the Read Consistency page words it.
func parse(r *http.Request, rt Route) (*Query, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "the query string does not parse (%v); encode it as key=value pairs joined by &.", err)
	}
	keys := make([]string, 0, len(vals))
	for k := range vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if !slices.Contains(rt.Keys, k) && !(rt.Grammar && slices.Contains(grammarKeys, k)) {
			allowed := slices.Clone(rt.Keys)
			if rt.Grammar {
				allowed = append(allowed, grammarKeys...)
			}
			takes := "no query keys"
			if len(allowed) > 0 {
				takes = strings.Join(allowed, ", ")
			}
			return nil, invalid(k, "%s takes no key %q; it takes %s.", rt.Pattern, k, takes)
		}
		if len(vals[k]) > 1 {
			return nil, invalid(k, "%s is given %d times; give it once.", k, len(vals[k]))
		}
		if vals[k][0] == "" {
			return nil, invalid(k, "%s is empty; give it a value or leave it out.", k)
		}
	}
	q := &Query{req: r, vals: vals, Read: engine.ReadOptions{Level: DefaultLevel}}
	if !rt.Grammar {
		return q, nil
	}
	if v := vals.Get(KeyReadLevel); v != "" {
		l, ok := engine.ParseReadLevel(v)
		if !ok {
			return nil, invalid(KeyReadLevel, "read_level=%q is not one of linearizable, session, stale, consistent_prefix.", v)
		}
		q.Read.Level = l
	}
	if v := vals.Get(KeyMinPosition); v != "" {
		p, err := engine.ParsePosition(v)
		if err != nil {
			return nil, invalid(KeyMinPosition, "min_position: %v; pass the position a write answered with, exactly as it was given (for example %s@1:42).", err, engine.StreamTracker)
		}
		q.Read.MinPosition = &p
	}
	if v := vals.Get(KeyMaxLagSeq); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if !decimalRE.MatchString(v) || err != nil {
			return nil, invalid(KeyMaxLagSeq, "max_lag_seq=%q is not a whole number of records; give one like 250 (0 is no bound).", v)
		}
		q.Read.MaxLagSeq = n
	}
	if v := vals.Get(KeyMaxLagSeconds); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if !secondsRE.MatchString(v) || err != nil || math.IsInf(f, 0) {
			return nil, invalid(KeyMaxLagSeconds, "max_lag_seconds=%q is not a number of seconds; give one like 2 or 0.5 (0 is no bound).", v)
		}
		q.Read.MaxLagSeconds = f
	}
	return q, nil
}

var secondsRE = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?$`)

func (s *server) serve(rt Route) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, engine.Refuse(engine.CodeInvalidArgument, "%s answers GET only; the read path changes nothing.", r.URL.Path).Object())
			return
		}
		q, err := parse(r, rt)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		ans, err := rt.Serve(r.Context(), q)
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
