package httpedge

import (
	"log/slog"
	"net/http"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Limits bound what one node's HTTP server takes. Zero fields take the
// defaults below.
type Limits struct {
	// MaxBodyBytes is http.max_body_bytes: the largest request body any
	// route takes. A larger one is refused too_large before it is read.
	MaxBodyBytes int64
	// MaxConnections is http.max_connections: the most connections open
	// at once. Past it new ones wait in the kernel's backlog, holding no
	// descriptor of this process, until an open one closes.
	MaxConnections int
	// ReadHeaderTimeout bounds a request's headers, counted from its first
	// byte, and a new connection's wait for its first request: a
	// connection that sends nothing is closed after it.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, body included. A route
	// that runs longer is not cut by it: net/http clears the read deadline
	// once the body is read.
	ReadTimeout time.Duration
	// WriteTimeout bounds each write of a response, not the response: the
	// deadline moves forward as the answer makes progress, so a stream
	// (the operator MCP's GET/SSE stream, a tool call answered as SSE)
	// lives as long as its client reads, and a client that stops reading
	// is cut after it.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection that sends no next
	// request.
	IdleTimeout time.Duration
}

// Defaults. The body cap fits any tool call a model writes (a page body
// is the largest) many times over; the connection cap stays well under
// the usual open-file limits beside what the broker and the store hold.
const (
	DefaultMaxBodyBytes      = 4 << 20
	DefaultMaxConnections    = 1024
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout lets a body of DefaultMaxBodyBytes arrive at
	// about 70 KB/s.
	DefaultReadTimeout  = time.Minute
	DefaultWriteTimeout = time.Minute
	DefaultIdleTimeout  = 2 * time.Minute
)

// WithDefaults returns l with every zero field set to its default.
func (l Limits) WithDefaults() Limits {
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.MaxConnections <= 0 {
		l.MaxConnections = DefaultMaxConnections
	}
	if l.ReadHeaderTimeout <= 0 {
		l.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if l.ReadTimeout <= 0 {
		l.ReadTimeout = DefaultReadTimeout
	}
	if l.WriteTimeout <= 0 {
		l.WriteTimeout = DefaultWriteTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	return l
}

// Server returns an http.Server serving h behind the edge: the limits'
// timeouts, bodies capped, write deadlines moved with progress, and
// net/http's own error lines logged through logger (component http), so
// a JSON log stays JSON. Serve it on Listener(ln, ...) for the
// connection cap.
func Server(h http.Handler, l Limits, logger *slog.Logger) *http.Server {
	l = l.WithDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With(engine.LogComponent, engine.ComponentHTTP)
	return &http.Server{
		Handler:           Handler(h, l, logger),
		ReadHeaderTimeout: l.ReadHeaderTimeout,
		ReadTimeout:       l.ReadTimeout,
		WriteTimeout:      l.WriteTimeout,
		IdleTimeout:       l.IdleTimeout,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// Handler is h behind the edge's per-request parts: the body cap (first:
// it needs net/http's own writer), then write deadlines that move with
// progress. Server uses it; serve it on an http.Server of its own only
// directly, not behind another wrapper of the writer.
func Handler(h http.Handler, l Limits, logger *slog.Logger) http.Handler {
	l = l.WithDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return limitBodies(l.MaxBodyBytes, logger, progressDeadlines(l.WriteTimeout, h))
}
