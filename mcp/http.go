package mcp

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"time"

	"github.com/mark3labs/mcp-go/server"
)

// sessionIdleTTL drops classic-protocol sessions nobody used for this long.
const sessionIdleTTL = time.Hour

// OperatorHandler is the operator MCP over Streamable HTTP. The mount
// decides its path (/operator/mcp) and puts the operator guard
// (httpedge.Guard: the token, Host and Origin) in front of it.
func OperatorHandler(s *server.MCPServer, logger *slog.Logger) http.Handler {
	logger = componentLogger(logger).With(slog.String("surface", "operator"))
	return server.NewStreamableHTTPServer(s,
		// The guard checks Host against the node's allowed hosts (loopback
		// included), which mcp-go's loopback-only DNS-rebinding check would
		// contradict for a node reached by a name on a loopback listener
		// behind a proxy.
		server.WithDisableLocalhostProtection(true),
		server.WithSessionIdleTTL(sessionIdleTTL),
		server.WithStreamableHTTPLogger(logger),
	)
}

// writeRefusal answers a refusal object, as every HTTP route of the node
// answers one: {"refused": "...", "message": "..."}.
func writeRefusal(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"refused": code, "message": msg})
}
