package rest

import (
	"net/url"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/ledger"
)

// writeOptions reads a write route's ?op_id= (the only key it takes) and
// digests the call as its MCP tool digests it, so an id from either
// surface comes back on the other. An id brought from outside must be one
// the engine minted: an id without a mint instant could never be vouched
// for by a ledger that lost rows.
func writeOptions(rawQuery string, op OpID, value string) (engine.WriteOptions, error) {
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return engine.WriteOptions{}, engine.Refuse(engine.CodeInvalidArgument, "the query string does not parse (%v); pass at most ?op_id=<id an answer gave>.", err)
	}
	for k, v := range vals {
		if k != "op_id" || len(v) != 1 || v[0] == "" {
			return engine.WriteOptions{}, engine.Refuse(engine.CodeInvalidArgument, "this route takes only ?op_id=<id an answer gave>, once; drop %q.", k).With("key", k)
		}
	}
	w := engine.WriteOptions{Digest: ledger.Digest(op.Tool, map[string]any{op.Arg: value})}
	if id := vals.Get("op_id"); id != "" {
		if _, err := ledger.RequireMinted(id); err != nil {
			return w, engine.Refuse(engine.CodeInvalidArgument, "%v.", err).With("key", "op_id")
		}
		w.OpID = id
	}
	return w, nil
}
