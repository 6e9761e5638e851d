package httpedge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
)

// CodeTooLarge refuses a request whose body is larger than
// http.max_body_bytes.
const CodeTooLarge = "too_large"

// limitBodies refuses a body over max with 413 too_large before anything
// holds it: a declared Content-Length over max is answered at once,
// before next runs (so before the guard: the cap does not depend on the
// caller's token), and an undeclared (chunked) body is cut at max by
// http.MaxBytesReader, its route's answer replaced by the refusal.
//
// Nothing here reads a body, and a route that answers without reading
// its body (the guard refusing a caller without a token, a route that
// takes none) is answered at once: its connection is closed after the
// answer. Kept open, net/http would first read up to 256 KiB of the
// unread body to reuse the connection, and a body that trickles would
// hold the answer until the read timeout.
//
// w must be net/http's own writer (limitBodies comes first in the
// chain): only it can be told the body will not be read.
func limitBodies(max int64, logger *slog.Logger, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			refuseTooLarge(w, r, max, logger)
			return
		}
		if r.ContentLength == 0 || r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		body := &watchedBody{ReadCloser: r.Body}
		if r.ContentLength < 0 {
			// A declared length within the cap is held to by net/http
			// itself; only a body of unknown length can grow past it.
			// MaxBytesReader gets the server's own writer so net/http
			// also closes the connection after the answer.
			body.ReadCloser = http.MaxBytesReader(w, r.Body, max)
		}
		r.Body = body
		bw := &bodyWriter{ResponseWriter: w, body: body, refuse: func() { refuseTooLarge(w, r, max, logger) }}
		next.ServeHTTP(bw, r)
		bw.finish()
	})
}

// watchedBody notes whether the route read the body to its end, and
// whether it read past the cap.
type watchedBody struct {
	io.ReadCloser
	eof  atomic.Bool
	over atomic.Bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	var mbe *http.MaxBytesError
	switch {
	case err == io.EOF:
		b.eof.Store(true)
	case err != nil && errors.As(err, &mbe):
		b.over.Store(true)
	}
	return n, err
}

// bodyWriter decides at the route's first write how its answer goes out:
// the too_large refusal in place of it when the route read past the cap
// (a route reading a cut body answers a parse error of its own — mcp-go
// a JSON-RPC one — which would hide what happened and what to do), and
// on a closing connection when the route left its body unread.
type bodyWriter struct {
	http.ResponseWriter
	body    *watchedBody
	refuse  func()
	decided bool
	ours    bool // the refusal took the route's place
}

// decide runs at the route's first write and reports whether the
// refusal took its place.
func (w *bodyWriter) decide() bool {
	if w.decided {
		return w.ours
	}
	w.decided = true
	switch {
	case w.body.over.Load():
		w.ours = true
		w.refuse()
	case !w.body.eof.Load():
		abandonBody(w.ResponseWriter)
	}
	return w.ours
}

// abandonBody tells net/http that the request's body will not be read:
// it answers with Connection: close, then closes the connection the way
// it does past a MaxBytesReader (half-close, a short wait, close), so the
// client reads the answer before the unread body resets the connection.
// A MaxBytesReader of limit 0 read by one byte is the one public way to
// say so; w must be net/http's own writer.
func abandonBody(w http.ResponseWriter) {
	_, _ = http.MaxBytesReader(w, io.NopCloser(strings.NewReader("x")), 0).Read(make([]byte, 1))
}

func (w *bodyWriter) WriteHeader(code int) {
	if w.decide() {
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *bodyWriter) Write(p []byte) (int, error) {
	if w.decide() {
		return len(p), nil
	}
	return w.ResponseWriter.Write(p)
}

// Flush keeps streaming working through the wrapper: mcp-go streams only
// to a writer that is an http.Flusher.
func (w *bodyWriter) Flush() {
	if w.decide() {
		return
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection.
func (w *bodyWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// finish decides for a route that wrote nothing: net/http answers it 200
// with no body unless the refusal takes its place.
func (w *bodyWriter) finish() { w.decide() }

func refuseTooLarge(w http.ResponseWriter, r *http.Request, max int64, logger *slog.Logger) {
	logger.InfoContext(r.Context(), "http_request_refused",
		slog.String("refused", CodeTooLarge),
		slog.Int("status", http.StatusRequestEntityTooLarge),
		slog.String("method", r.Method),
		slog.String("path", r.URL.Path),
		slog.Int64("content_length", r.ContentLength),
		slog.Int64("max_body_bytes", max),
		slog.String("remote", r.RemoteAddr))
	h := w.Header()
	// Headers the route set for its own answer do not belong to ours.
	for k := range h {
		delete(h, k)
	}
	// The rest of the body is not read: the connection cannot carry
	// another request after it.
	h.Set("Connection", "close")
	writeJSON(w, http.StatusRequestEntityTooLarge, map[string]any{
		"refused":        CodeTooLarge,
		"message":        fmt.Sprintf("The request body is larger than this node takes (http.max_body_bytes, %d bytes); nothing of it was run. Send a smaller body — split a large page or batch into several calls — or, if calls this size are legitimate, raise http.max_body_bytes.", max),
		"max_body_bytes": max,
	})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	// Only maps of plain values come here: Marshal cannot fail.
	body, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}
