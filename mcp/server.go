package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"runtime/debug"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// ServerName is the implementation name every Crewlet MCP server reports.
const ServerName = "crewlet"

const instructions = "Crewlet is a replicated work tracker. Reads answer at linearizable: they see every write acknowledged before them. " +
	"Every write answers an op_id and an outcome: applied; pending (durable, do not retry); unknown (call again with the same arguments and that op_id). " +
	"Every answer's text is its JSON object. A refusal is a result with isError whose text is the JSON object {refused, message, retry_after_seconds?}: do what the message says."

// newBareServer is a server with Crewlet's options and no tools yet: the
// proxies' (a remote node's, a data node's through the estate), which
// forward tool calls alone; they register theirs through listed.
// mcp-go's input schema validation stays off (see build).
func newBareServer(version string, logger *slog.Logger) (s *server.MCPServer, listed listedSchemas) {
	return newToolServer(version,
		server.WithToolCapabilities(false),
		server.WithInstructions(instructions),
		server.WithToolHandlerMiddleware(recovery(logger)),
	)
}

// recovery turns a panic in a tool handler into an internal refusal result
// and logs it with its stack; mcp-go's own WithRecovery would answer a
// JSON-RPC error carrying the panic text instead.
func recovery(logger *slog.Logger) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcpgo.CallToolRequest) (res *mcpgo.CallToolResult, err error) {
			defer func() {
				if p := recover(); p != nil {
					logger.ErrorContext(ctx, "tool_panic",
						slog.String("tool", req.Params.Name),
						slog.String(engine.LogErr, fmt.Sprint(p)),
						slog.String("stack", string(debug.Stack())))
					res, err = tools.Internal(), nil
				}
			}()
			return next(ctx, req)
		}
	}
}

// ServeStdio serves s over in and out until in ends or ctx is cancelled.
// out belongs to the protocol: nothing else may write to it, so mcp-go's
// error log goes to logger (which must not write to stdout).
func ServeStdio(ctx context.Context, s *server.MCPServer, in io.Reader, out io.Writer, logger *slog.Logger) error {
	logger = componentLogger(logger)
	stdio := server.NewStdioServer(s)
	stdio.SetErrorLogger(slog.NewLogLogger(logger.Handler(), slog.LevelError))
	logger.InfoContext(ctx, "mcp_stdio_serving")
	err := stdio.Listen(ctx, in, out)
	if err != nil && ctx.Err() != nil {
		// Cancelled: the caller asked us to stop.
		return nil
	}
	return err
}

func componentLogger(logger *slog.Logger) *slog.Logger {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return logger.With(slog.String(engine.LogComponent, engine.ComponentMCP))
}
