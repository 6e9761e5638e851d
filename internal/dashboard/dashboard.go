// Package dashboard serves Crewlet's web dashboard: one page and its
// script and stylesheet, embedded in the binary so a clone needs no build
// step. The page carries no data: it asks for the operator token and then
// reads the node's REST read path (/api/v1/…) with it, at the read level
// the operator chooses (stale by default), rendering each answer's level
// and lag beside its rows. The caller mounts Handler behind the Host and
// Origin rules of every other route (httpedge.Guard.Page); the data routes keep
// the token.
package dashboard

import (
	"embed"
	"io/fs"
	"net/http"
)

//go:embed assets
var assets embed.FS

// Handler serves GET / (the page) and GET /ui/<asset>. Anything else under
// /ui/ is 404; the page and assets are never cached, so an upgraded node
// serves its own script at once.
func Handler() http.Handler {
	files, err := fs.Sub(assets, "assets")
	if err != nil {
		panic(err) // the embedded tree is fixed at build time
	}
	static := http.StripPrefix("/ui/", http.FileServerFS(files))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		secure(w)
		http.ServeFileFS(w, r, files, "index.html")
	})
	mux.Handle("GET /ui/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ui/" || r.URL.Path == "/ui/index.html" {
			http.NotFound(w, r)
			return
		}
		secure(w)
		static.ServeHTTP(w, r)
	}))
	return mux
}

// secure sets what keeps the page to itself: scripts and styles only from
// this node, no framing, no sniffing, no caching.
func secure(w http.ResponseWriter) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-cache")
}
