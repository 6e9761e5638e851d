package mcp

import (
	"context"
	"log/slog"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// LogRelay sends the node's log lines to the MCP clients that asked for
// them: a client that calls logging/setLevel gets every line at or above
// that level as notifications/message, the logger named by the line's
// component, the data the line's message and fields. A client that never
// calls it gets none (a host that wants no log traffic pays nothing).
// Wrap the node's logger's handler with Handler before the node opens, so
// every line of the node, its applier's included, passes through it.
type LogRelay struct {
	mu sync.Mutex
	// levels: the sessions that asked, by server, and the level asked.
	levels map[*server.MCPServer]map[string]mcpgo.LoggingLevel
	// servers are the servers attached: only their requests get lines.
	servers map[*server.MCPServer]bool
}

// NewLogRelay is a relay with no client yet.
func NewLogRelay() *LogRelay {
	return &LogRelay{levels: map[*server.MCPServer]map[string]mcpgo.LoggingLevel{}, servers: map[*server.MCPServer]bool{}}
}

// attach takes s's clients' logging/setLevel and forgets a client when
// its session ends.
func (r *LogRelay) attach(s *server.MCPServer, hooks *server.Hooks) {
	r.mu.Lock()
	r.servers[s] = true
	r.mu.Unlock()
	hooks.AddAfterSetLevel(func(ctx context.Context, _ any, req *mcpgo.SetLevelRequest, _ *mcpgo.EmptyResult) {
		session := server.ClientSessionFromContext(ctx)
		if session == nil {
			return
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if r.levels[s] == nil {
			r.levels[s] = map[string]mcpgo.LoggingLevel{}
		}
		r.levels[s][session.SessionID()] = req.Params.Level
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		r.mu.Lock()
		defer r.mu.Unlock()
		delete(r.levels[s], session.SessionID())
	})
}

// mcpLevel is the protocol's level of a slog level.
func mcpLevel(l slog.Level) mcpgo.LoggingLevel {
	switch {
	case l < slog.LevelInfo:
		return mcpgo.LoggingLevelDebug
	case l < slog.LevelWarn:
		return mcpgo.LoggingLevelInfo
	case l < slog.LevelError:
		return mcpgo.LoggingLevelWarning
	}
	return mcpgo.LoggingLevelError
}

// wants reports whether some client asked for lines at l.
func (r *LogRelay) wants(l slog.Level) bool {
	lv := mcpLevel(l)
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, sessions := range r.levels {
		for _, asked := range sessions {
			if lv.ShouldSendTo(asked) {
				return true
			}
		}
	}
	return false
}

// sendToRequester sends a line logged while serving a request of the
// stateless protocol (2026-07-28), which has no logging/setLevel: the
// request names its level in _meta and gets the lines at or above it
// that its own handling logs, on its own response (mcp-go sends nothing
// to a request that named no level).
func (r *LogRelay) sendToRequester(ctx context.Context, rec slog.Record, attrs []slog.Attr) {
	info := server.RequestProtocolInfoFromContext(ctx)
	if info == nil || !info.Modern || info.LogLevel == "" {
		return
	}
	s := server.ServerFromContext(ctx)
	if s == nil || !r.attached(s) {
		return
	}
	_ = s.SendLogMessageToClient(ctx, r.notification(rec, attrs))
}

func (r *LogRelay) attached(s *server.MCPServer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.servers[s]
	return ok
}

// send sends one line to every client that asked for its level. The
// sends do not block (a full channel drops the line for that client) and
// log nothing, so a line can never beget another.
func (r *LogRelay) send(rec slog.Record, attrs []slog.Attr) {
	n := r.notification(rec, attrs)
	r.mu.Lock()
	defer r.mu.Unlock()
	for s, sessions := range r.levels {
		for id := range sessions {
			_ = s.SendLogMessageToSpecificClient(id, n)
		}
	}
}

// notification is a line as notifications/message.
func (r *LogRelay) notification(rec slog.Record, attrs []slog.Attr) mcpgo.LoggingMessageNotification {
	data := map[string]any{"msg": rec.Message, "time": rec.Time}
	name := "crewlet"
	add := func(a slog.Attr) bool {
		if a.Key == engine.LogComponent {
			name = a.Value.String()
		}
		data[a.Key] = a.Value.Resolve().Any()
		return true
	}
	for _, a := range attrs {
		add(a)
	}
	rec.Attrs(add)
	return mcpgo.NewLoggingMessageNotification(mcpLevel(rec.Level), name, data)
}

// Handler wraps base: every line still goes to base (where base takes its
// level), and to the clients that asked for it.
func (r *LogRelay) Handler(base slog.Handler) slog.Handler {
	return &relayHandler{base: base, relay: r}
}

type relayHandler struct {
	base  slog.Handler
	relay *LogRelay
	attrs []slog.Attr
}

func (h *relayHandler) Enabled(ctx context.Context, l slog.Level) bool {
	if h.base.Enabled(ctx, l) || h.relay.wants(l) {
		return true
	}
	info := server.RequestProtocolInfoFromContext(ctx)
	return info != nil && info.Modern && info.LogLevel != "" && mcpLevel(l).ShouldSendTo(info.LogLevel)
}

func (h *relayHandler) Handle(ctx context.Context, rec slog.Record) error {
	if h.relay.wants(rec.Level) {
		h.relay.send(rec, h.attrs)
	}
	h.relay.sendToRequester(ctx, rec, h.attrs)
	if h.base.Enabled(ctx, rec.Level) {
		return h.base.Handle(ctx, rec)
	}
	return nil
}

func (h *relayHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &relayHandler{base: h.base.WithAttrs(attrs), relay: h.relay, attrs: append(append([]slog.Attr(nil), h.attrs...), attrs...)}
}

// WithGroup keeps the relay's fields flat: a group's name is dropped on
// the client's copy, never on base's.
func (h *relayHandler) WithGroup(name string) slog.Handler {
	return &relayHandler{base: h.base.WithGroup(name), relay: h.relay, attrs: h.attrs}
}
