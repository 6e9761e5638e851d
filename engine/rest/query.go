package rest

import (
	"math"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine"
)

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

// Query is one request's parsed query: the read options from the grammar,
// a write route's options from ?op_id=, and the route's own keys, each
// given at most once.
type Query struct {
	Read  engine.ReadOptions
	Write engine.WriteOptions
	req   *http.Request
	vals  url.Values
}

// Has reports whether key was given.
func (q *Query) Has(key string) bool { _, ok := q.vals[key]; return ok }

// Str is key's value, "" when absent.
func (q *Query) Str(key string) string { return q.vals.Get(key) }

// Path is a path wildcard's value.
func (q *Query) Path(name string) string { return q.req.PathValue(name) }

// Raw is the query string as sent, for an Unchecked route.
func (q *Query) Raw() string { return q.req.URL.RawQuery }

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

// parse reads the query as rt declares it: an Unchecked route's is its
// own, a write route's is ?op_id= alone (writeOptions), and every other
// route's is read strictly (parseStrict).
func parse(r *http.Request, rt Route) (*Query, error) {
	q := &Query{req: r, Read: engine.ReadOptions{Level: DefaultLevel}}
	switch {
	case rt.Unchecked:
		return q, nil
	case rt.OpID != nil:
		w, err := writeOptions(r.URL.RawQuery, *rt.OpID, r.PathValue(rt.OpID.Arg))
		q.Write = w
		return q, err
	}
	return parseStrict(q, rt)
}

// parseStrict reads the query strictly: no unknown key, no key twice, no
// empty value, and the grammar as the Read Consistency page words it.
func parseStrict(q *Query, rt Route) (*Query, error) {
	vals, err := url.ParseQuery(q.req.URL.RawQuery)
	if err != nil {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "the query string does not parse (%v); encode it as key=value pairs joined by &.", err)
	}
	if err := checkKeys(vals, rt); err != nil {
		return nil, err
	}
	q.vals = vals
	if !rt.Grammar {
		return q, nil
	}
	return q, readGrammar(vals, &q.Read)
}

// checkKeys refuses a key rt does not take, a key given twice and an
// empty value.
func checkKeys(vals url.Values, rt Route) error {
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
			return invalid(k, "%s takes no key %q; it takes %s.", rt.Pattern, k, takes)
		}
		if len(vals[k]) > 1 {
			return invalid(k, "%s is given %d times; give it once.", k, len(vals[k]))
		}
		if vals[k][0] == "" {
			return invalid(k, "%s is empty; give it a value or leave it out.", k)
		}
	}
	return nil
}

// readGrammar fills r from the grammar's keys in vals.
func readGrammar(vals url.Values, r *engine.ReadOptions) error {
	if v := vals.Get(KeyReadLevel); v != "" {
		l, ok := engine.ParseReadLevel(v)
		if !ok {
			return invalid(KeyReadLevel, "read_level=%q is not one of linearizable, session, stale, consistent_prefix.", v)
		}
		r.Level = l
	}
	if v := vals.Get(KeyMinPosition); v != "" {
		p, err := engine.ParsePosition(v)
		if err != nil {
			return invalid(KeyMinPosition, "min_position: %v; pass the position a write answered with, exactly as it was given (for example %s@1:42).", err, engine.StreamTracker)
		}
		r.MinPosition = &p
	}
	if v := vals.Get(KeyMaxLagSeq); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if !decimalRE.MatchString(v) || err != nil {
			return invalid(KeyMaxLagSeq, "max_lag_seq=%q is not a whole number of records; give one like 250 (0 is no bound).", v)
		}
		r.MaxLagSeq = n
	}
	if v := vals.Get(KeyMaxLagSeconds); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if !secondsRE.MatchString(v) || err != nil || math.IsInf(f, 0) {
			return invalid(KeyMaxLagSeconds, "max_lag_seconds=%q is not a number of seconds; give one like 2 or 0.5 (0 is no bound).", v)
		}
		r.MaxLagSeconds = f
	}
	return nil
}

var secondsRE = regexp.MustCompile(`^(0|[1-9][0-9]*)(\.[0-9]+)?$`)
