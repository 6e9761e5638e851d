package httpedge

import (
	"net/http"
	"time"
)

// progressDeadlines moves the connection's write deadline forward as the
// response makes progress: every write starts with at least half of d
// ahead of it. http.Server.WriteTimeout alone is one deadline for the
// whole response, counted from the request, so it would cut the operator
// MCP's GET/SSE stream, which stays open for as long as the session, and
// a tool call answered as a stream of events; a client that stops
// reading is still cut, d after the write it stopped on.
func progressDeadlines(d time.Duration, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pw := &progressWriter{ResponseWriter: w, rc: http.NewResponseController(w), d: d}
		next.ServeHTTP(pw, r)
		// net/http flushes what is buffered after the handler returns.
		pw.move(time.Now())
	})
}

type progressWriter struct {
	http.ResponseWriter
	rc    *http.ResponseController
	d     time.Duration
	moved time.Time // when the deadline was last moved
}

// extend moves the deadline to d from now unless it was moved less than
// d/2 ago: moving it costs little, but a stream writes often.
func (w *progressWriter) extend() {
	now := time.Now()
	if now.Sub(w.moved) < w.d/2 {
		return
	}
	w.move(now)
}

func (w *progressWriter) move(now time.Time) {
	w.moved = now
	// A writer that cannot take a deadline (a test recorder) has no
	// connection to cut.
	_ = w.rc.SetWriteDeadline(now.Add(w.d))
}

func (w *progressWriter) WriteHeader(code int) {
	w.extend()
	w.ResponseWriter.WriteHeader(code)
}

func (w *progressWriter) Write(p []byte) (int, error) {
	w.extend()
	return w.ResponseWriter.Write(p)
}

// Flush keeps streaming working through the wrapper: mcp-go streams only
// to a writer that is an http.Flusher.
func (w *progressWriter) Flush() {
	w.extend()
	_ = w.rc.Flush()
}

// Unwrap lets http.ResponseController reach the connection.
func (w *progressWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
