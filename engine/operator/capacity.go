package operator

import (
	"context"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
)

// CapacitySetter changes a state log's byte ceiling (the node does).
type CapacitySetter interface {
	SetCapacity(ctx context.Context, log string, maxBytes int64) (capacity.Change, error)
}

// CapacityPath is the route of crewlet retention set-capacity, {log}
// being the domain (tracker) or its stream; the ceiling is ?max_bytes=N.
// It takes no op_id: setting a ceiling to a number is the same change
// however often it is sent.
func CapacityPath(log string) string { return "/api/v1/logs/" + url.PathEscape(log) + "/capacity" }

// MountCapacity adds the set-capacity route to mux.
func MountCapacity(mux *http.ServeMux, s CapacitySetter, logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With(engine.LogComponent, engine.ComponentHTTP)
	mux.Handle("POST /api/v1/logs/{log}/capacity", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, err := maxBytesQuery(r.URL.RawQuery)
		if err != nil {
			answer(w, r, logger, nil, err)
			return
		}
		res, err := s.SetCapacity(engine.WithActor(r.Context(), "operator"), r.PathValue("log"), n)
		answer(w, r, logger, res, err)
	}))
}

// maxBytesQuery reads ?max_bytes= (the only key the route takes).
func maxBytesQuery(raw string) (int64, error) {
	q, err := url.ParseQuery(raw)
	if err != nil {
		return 0, engine.Refuse(engine.CodeInvalidArgument, "the query string is malformed: %v", err)
	}
	for k := range q {
		if k != "max_bytes" {
			return 0, engine.Refuse(engine.CodeInvalidArgument, "unknown query parameter %q: this route takes max_bytes only.", k)
		}
	}
	n, err := strconv.ParseInt(q.Get("max_bytes"), 10, 64)
	if err != nil || n <= 0 || len(q["max_bytes"]) != 1 {
		return 0, engine.Refuse(engine.CodeInvalidArgument, "max_bytes must be one positive whole number of bytes (got %q).", q.Get("max_bytes"))
	}
	return n, nil
}
