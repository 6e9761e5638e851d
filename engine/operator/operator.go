// Package operator serves the operator's write routes beside the read
// path: a task's or a page's purge and a node's eviction or readmission,
// each taking its operation id as ?op_id= so a caller whose answer was
// lost can run the same operation again. An id brought from outside must
// be one the engine minted: an id without a mint instant could never be
// vouched for by a ledger that lost rows.
package operator

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/url"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/ledger"
)

// Route is one operator write route: a POST whose one path wildcard (Arg)
// names the object, running the write under the op id ?op_id= brings
// back, digested as the MCP tool (Tool) digests the same call, so an id
// from either surface comes back on the other.
type Route struct {
	Pattern string
	Tool    string
	Arg     string
	Run     func(ctx context.Context, w engine.WriteOptions, value string) (any, error)
}

// WriteRouter is a service that offers operator write routes: a domain's
// service (its purge), the node gates.
type WriteRouter interface {
	OperatorRoutes() []Route
}

// RoutesOf collects the routes of every service that offers some, in the
// order given.
func RoutesOf(services ...any) []Route {
	var out []Route
	for _, s := range services {
		if wr, ok := s.(WriteRouter); ok {
			out = append(out, wr.OperatorRoutes()...)
		}
	}
	return out
}

// Config is what the operator's routes are and where an internal error
// is logged.
type Config struct {
	Routes []Route
	Logger *slog.Logger
}

// Mount adds the routes to mux (behind whatever guards the mux).
func Mount(mux *http.ServeMux, cfg Config) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(engine.LogComponent, engine.ComponentHTTP)
	for _, rt := range cfg.Routes {
		mux.Handle(rt.Pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			v := r.PathValue(rt.Arg)
			opts, err := writeOptions(r.URL.RawQuery, rt.Tool, rt.Arg, v)
			if err != nil {
				answer(w, r, log, nil, err)
				return
			}
			// Every route here is behind the operator's token.
			res, err := rt.Run(engine.WithActor(r.Context(), "operator"), opts, v)
			answer(w, r, log, res, err)
		}))
	}
}

// writeOptions reads ?op_id= (the only key these routes take) and digests
// the call as its MCP tool does, so an id from either surface comes back
// on the other.
func writeOptions(rawQuery, tool, arg, value string) (engine.WriteOptions, error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return engine.WriteOptions{}, engine.Refuse(engine.CodeInvalidArgument, "the query string does not parse (%v); pass at most ?op_id=<id an answer gave>.", err)
	}
	for k, v := range vals {
		if k != "op_id" || len(v) != 1 || v[0] == "" {
			return engine.WriteOptions{}, engine.Refuse(engine.CodeInvalidArgument, "this route takes only ?op_id=<id an answer gave>, once; drop %q.", k).With("key", k)
		}
	}
	w := engine.WriteOptions{Digest: ledger.Digest(tool, map[string]any{arg: value})}
	if id := vals.Get("op_id"); id != "" {
		if _, err := ledger.RequireMinted(id); err != nil {
			return w, engine.Refuse(engine.CodeInvalidArgument, "%v.", err).With("key", "op_id")
		}
		w.OpID = id
	}
	return w, nil
}

func answer(w http.ResponseWriter, r *http.Request, log *slog.Logger, res any, err error) {
	status, body := http.StatusOK, res
	if err != nil {
		ref, ok := engine.AsRefusal(err)
		if !ok {
			if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
				return
			}
			log.ErrorContext(r.Context(), "http_internal_error", "path", r.URL.Path, engine.LogErr, err.Error())
			ref = engine.RefuseDoc(engine.CodeInternal)
		}
		status, body = engine.HTTPStatus(ref.Code), ref.Object()
	}
	data, _ := json.Marshal(body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	w.Write(data)
}

// NodeGates evicts and readmits nodes of the fleet.
type NodeGates interface {
	EvictNode(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error)
	ReadmitNode(ctx context.Context, w engine.WriteOptions, node string) (statelog.NodeGateWrite, error)
}

// NodeGateRoutes are the node gates' write routes: a node's eviction and
// its readmission.
func NodeGateRoutes(g NodeGates) []Route {
	return []Route{
		{Pattern: "POST /api/v1/nodes/{node}/evict", Tool: "evict_node", Arg: "node",
			Run: func(ctx context.Context, w engine.WriteOptions, node string) (any, error) {
				return g.EvictNode(ctx, w, node)
			}},
		{Pattern: "POST /api/v1/nodes/{node}/readmit", Tool: "readmit_node", Arg: "node",
			Run: func(ctx context.Context, w engine.WriteOptions, node string) (any, error) {
				return g.ReadmitNode(ctx, w, node)
			}},
	}
}
