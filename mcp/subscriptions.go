package mcp

import (
	"context"
	"log/slog"
	"sync"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// subs are a server's resource subscriptions: which session waits on
// which URI, by the scope a record names when it changes that resource.
// mcp-go acknowledges resources/subscribe and keeps nothing; the hooks
// below keep it here, and the node's applier says when to notify.
type subs struct {
	mu sync.Mutex
	// byScope: scope -> session id -> URIs.
	byScope map[string]map[string]map[string]bool
	// bySession: session id -> URI -> scope, to unsubscribe.
	bySession map[string]map[string]string
	// listens are the open subscriptions/listen streams (protocol
	// 2026-07-28), which carry their resource URIs themselves.
	listens map[server.ClientSession]listen
}

// listen is one subscriptions/listen stream: its request id, which tags
// every notification on it, and the scopes of its URIs.
type listen struct {
	id     any
	scopes map[string][]string // scope -> URIs
}

// subscribe wires resources/subscribe and unsubscribe, a session's end,
// and the node's applier into s: a session subscribed to a resource gets
// notifications/resources/updated {uri} when a record that may change it
// applies on this node.
func subscribe(s *server.MCPServer, hooks *server.Hooks, c tools.Catalogue, d tools.Deps, applied Applied, logger *slog.Logger) {
	t := &subs{byScope: map[string]map[string]map[string]bool{}, bySession: map[string]map[string]string{}, listens: map[server.ClientSession]listen{}}
	t.hookListen(hooks, c, d, logger)
	hooks.AddAfterSubscribe(func(ctx context.Context, _ any, req *mcpgo.SubscribeRequest, _ *mcpgo.EmptyResult) {
		session := server.ClientSessionFromContext(ctx)
		if session == nil {
			return
		}
		uri := req.Params.URI
		scope, err := c.ResourceScope(ctx, d, uri)
		if err != nil {
			// mcp-go has answered already; the line says why nothing will
			// come of it.
			logger.WarnContext(ctx, "resource_subscribe_unresolved", "uri", uri, engine.LogErr, err.Error())
			return
		}
		t.add(session.SessionID(), uri, scope)
	})
	hooks.AddAfterUnsubscribe(func(ctx context.Context, _ any, req *mcpgo.UnsubscribeRequest, _ *mcpgo.EmptyResult) {
		if session := server.ClientSessionFromContext(ctx); session != nil {
			t.remove(session.SessionID(), req.Params.URI)
		}
	})
	hooks.AddOnUnregisterSession(func(_ context.Context, session server.ClientSession) {
		t.drop(session.SessionID())
	})
	// The server lives as long as the node: the seam is never stopped.
	applied.OnApplied(func(scopes []string) {
		for session, uris := range t.match(scopes) {
			for uri := range uris {
				// Non-blocking: a session whose channel is full misses the
				// notification rather than holding up the applier.
				_ = s.SendNotificationToSpecificClient(session, mcpgo.MethodNotificationResourceUpdated, map[string]any{"uri": uri})
			}
		}
		t.tellListens(scopes)
	})
}

// hookListen keeps the resource URIs of each subscriptions/listen stream
// (protocol 2026-07-28) while it is open: mcp-go hands them only to a
// session type of its own that keeps them, which none of its transports'
// sessions is.
func (t *subs) hookListen(hooks *server.Hooks, c tools.Catalogue, d tools.Deps, logger *slog.Logger) {
	hooks.AddBeforeSubscriptionsListen(func(ctx context.Context, id any, req *mcpgo.SubscriptionsListenRequest) {
		session := server.ClientSessionFromContext(ctx)
		uris := req.Params.Notifications.ResourceSubscriptions
		if session == nil || id == nil || len(uris) == 0 {
			return
		}
		l := listen{id: id, scopes: map[string][]string{}}
		for _, uri := range uris {
			scope, err := c.ResourceScope(ctx, d, uri)
			if err != nil {
				logger.WarnContext(ctx, "resource_subscribe_unresolved", "uri", uri, engine.LogErr, err.Error())
				continue
			}
			l.scopes[scope] = append(l.scopes[scope], uri)
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		t.listens[session] = l
	})
	end := func(ctx context.Context) {
		if session := server.ClientSessionFromContext(ctx); session != nil {
			t.mu.Lock()
			defer t.mu.Unlock()
			delete(t.listens, session)
		}
	}
	hooks.AddAfterSubscriptionsListen(func(ctx context.Context, _ any, _ *mcpgo.SubscriptionsListenRequest, _ *mcpgo.SubscriptionsListenResult) {
		end(ctx)
	})
	hooks.AddOnError(func(ctx context.Context, _ any, method mcpgo.MCPMethod, _ any, _ error) {
		if method == mcpgo.MethodSubscriptionsListen {
			end(ctx)
		}
	})
}

// tellListens sends notifications/resources/updated, tagged with the
// stream's id, on every open stream that names a resource of scopes.
func (t *subs) tellListens(scopes []string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for session, l := range t.listens {
		told := map[string]bool{}
		for _, sc := range scopes {
			for _, uri := range l.scopes[sc] {
				if told[uri] {
					continue
				}
				told[uri] = true
				n := mcpgo.JSONRPCNotification{JSONRPC: mcpgo.JSONRPC_VERSION, Notification: mcpgo.Notification{
					Method: mcpgo.MethodNotificationResourceUpdated,
					Params: mcpgo.NotificationParams{
						Meta:             map[string]any{mcpgo.MetaKeySubscriptionID: l.id},
						AdditionalFields: map[string]any{"uri": uri},
					},
				}}
				select {
				case session.NotificationChannel() <- n:
				default:
					// A full stream misses it rather than holding up the
					// applier.
				}
			}
		}
	}
}

func (t *subs) add(session, uri, scope string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(session, uri)
	if t.bySession[session] == nil {
		t.bySession[session] = map[string]string{}
	}
	t.bySession[session][uri] = scope
	if t.byScope[scope] == nil {
		t.byScope[scope] = map[string]map[string]bool{}
	}
	if t.byScope[scope][session] == nil {
		t.byScope[scope][session] = map[string]bool{}
	}
	t.byScope[scope][session][uri] = true
}

func (t *subs) remove(session, uri string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.removeLocked(session, uri)
}

func (t *subs) removeLocked(session, uri string) {
	scope, ok := t.bySession[session][uri]
	if !ok {
		return
	}
	delete(t.bySession[session], uri)
	if len(t.bySession[session]) == 0 {
		delete(t.bySession, session)
	}
	delete(t.byScope[scope][session], uri)
	if len(t.byScope[scope][session]) == 0 {
		delete(t.byScope[scope], session)
	}
	if len(t.byScope[scope]) == 0 {
		delete(t.byScope, scope)
	}
}

func (t *subs) drop(session string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for uri := range t.bySession[session] {
		t.removeLocked(session, uri)
	}
}

// match is every session's URIs a record naming scopes may change, each
// once.
func (t *subs) match(scopes []string) map[string]map[string]bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out map[string]map[string]bool
	for _, sc := range scopes {
		for session, uris := range t.byScope[sc] {
			if out == nil {
				out = map[string]map[string]bool{}
			}
			if out[session] == nil {
				out[session] = map[string]bool{}
			}
			for uri := range uris {
				out[session][uri] = true
			}
		}
	}
	return out
}
