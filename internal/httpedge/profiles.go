package httpedge

import (
	"net/http"
	"net/http/pprof"
	"strings"
)

// ProfilePrefix is where WithProfiles serves Go's runtime profiles.
const ProfilePrefix = "/debug/pprof/"

// WithProfiles serves Go's runtime profiles (net/http/pprof: a CPU
// profile over ?seconds=N, the heap, goroutines, ...) at ProfilePrefix
// behind the operator's token, and every other path from next. A node
// serves them only when asked to (crewlet serve --pprof): a CPU profile
// costs the node while it runs, and a heap or goroutine dump says more
// about the process than an operator's routes do.
func WithProfiles(next http.Handler, guard *Guard) http.Handler {
	mux := http.NewServeMux()
	mux.Handle(ProfilePrefix, guard.Operator(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch strings.TrimPrefix(r.URL.Path, ProfilePrefix) {
		case "profile":
			pprof.Profile(w, r)
		case "trace":
			pprof.Trace(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "cmdline":
			pprof.Cmdline(w, r)
		default:
			pprof.Index(w, r)
		}
	})))
	mux.Handle("/", next)
	return mux
}
