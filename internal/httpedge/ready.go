package httpedge

import (
	"net/http"

	"github.com/crewlet/crewlet/engine"
)

// Unready says why a node should take no traffic, nil while it serves.
type Unready func() *engine.Refusal

// Ready answers /readyz. Like /healthz it wants no token: a load balancer
// or an orchestrator asks it. /healthz says the process answers; /readyz
// says the node serves: 200 {"ready": true}, or 503 with
// {"ready": false, "refused": <code>, "message": ..., "alarm": <name>?}
// while unready names a refusal (stalled, evicted, maintenance, ...) and,
// where an alarm is what took the node out of service, its name.
//
// The message is the code table's sentence, not the refusal's own: the
// latter can carry what only an operator should read (the error an
// applier is stuck on), and the authenticated surfaces and `crewlet
// retention status` say it in full.
func Ready(unready Unready) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, engine.Refuse(engine.CodeInvalidArgument, "%s answers GET and HEAD only.", r.URL.Path).Object())
			return
		}
		if ref := unready(); ref != nil {
			obj := engine.RefuseDoc(ref.Code).Object()
			obj["ready"] = false
			if a, ok := ref.Fields["alarm"].(string); ok {
				// The alarm that took the node out of service.
				obj["alarm"] = a
			}
			writeJSON(w, http.StatusServiceUnavailable, obj)
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	})
}
