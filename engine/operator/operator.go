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
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// Tracker is the tracker's purge.
type Tracker interface {
	PurgeWorkItem(ctx context.Context, w engine.WriteOptions, key string) (tracker.PurgeResult, error)
}

// KB is the knowledge base's purge.
type KB interface {
	PurgePage(ctx context.Context, w engine.WriteOptions, id string) (kb.PurgeWrite, error)
}

// NodeGates evicts and readmits nodes.
type NodeGates interface {
	EvictNode(ctx context.Context, w engine.WriteOptions, node string) (fleet.NodeGateWrite, error)
	ReadmitNode(ctx context.Context, w engine.WriteOptions, node string) (fleet.NodeGateWrite, error)
}

// Config is what the routes act on; a nil part's routes answer not_found.
type Config struct {
	Tracker Tracker
	KB      KB
	Nodes   NodeGates
	Logger  *slog.Logger
}

// Routes are the operator's write routes, as net/http patterns.
var Routes = []string{
	"POST /api/v1/work-items/{key}/purge",
	"POST /api/v1/pages/{id}/purge",
	"POST /api/v1/nodes/{node}/evict",
	"POST /api/v1/nodes/{node}/readmit",
}

// Mount adds the routes to mux (behind whatever guards the mux).
func Mount(mux *http.ServeMux, cfg Config) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log = log.With(engine.LogComponent, engine.ComponentHTTP)
	h := func(tool, arg string, run func(ctx context.Context, w engine.WriteOptions, v string) (any, error)) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			v := r.PathValue(arg)
			opts, err := writeOptions(r.URL.RawQuery, tool, arg, v)
			if err != nil {
				answer(w, r, log, nil, err)
				return
			}
			res, err := run(r.Context(), opts, v)
			answer(w, r, log, res, err)
		}
	}
	mux.Handle(Routes[0], h("purge_work_item", "key", func(ctx context.Context, w engine.WriteOptions, v string) (any, error) {
		if cfg.Tracker == nil {
			return nil, engine.Refuse(engine.CodeNotFound, "this node serves no tracker.")
		}
		return cfg.Tracker.PurgeWorkItem(ctx, w, v)
	}))
	mux.Handle(Routes[1], h("purge_page", "id", func(ctx context.Context, w engine.WriteOptions, v string) (any, error) {
		if cfg.KB == nil {
			return nil, engine.Refuse(engine.CodeNotFound, "this node serves no knowledge base.")
		}
		return cfg.KB.PurgePage(ctx, w, v)
	}))
	mux.Handle(Routes[2], h("evict_node", "node", func(ctx context.Context, w engine.WriteOptions, v string) (any, error) {
		if cfg.Nodes == nil {
			return nil, engine.Refuse(engine.CodeNotFound, "this node gates no nodes.")
		}
		return cfg.Nodes.EvictNode(ctx, w, v)
	}))
	mux.Handle(Routes[3], h("readmit_node", "node", func(ctx context.Context, w engine.WriteOptions, v string) (any, error) {
		if cfg.Nodes == nil {
			return nil, engine.Refuse(engine.CodeNotFound, "this node gates no nodes.")
		}
		return cfg.Nodes.ReadmitNode(ctx, w, v)
	}))
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
