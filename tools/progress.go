package tools

// Progress of a long tool call (a bulk update, a bulk create, emptying
// the trash): MCP notifications/progress to the request's
// _meta.progressToken while the work applies, and a tool_progress log
// line at every tenth of the way and at its end.

import (
	"context"
	"log/slog"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
)

// EvToolProgress is the log line of a long call's progress (tool, done,
// total).
const EvToolProgress = "tool_progress"

// withProgress is ctx carrying an engine.Progress for a call of tool: it
// notifies the calling client when its request named a progress token,
// and logs. Notifications go out without blocking the work (mcp-go queues
// them on the request's stream; a full queue drops one).
func (d Deps) withProgress(ctx context.Context, req mcp.CallToolRequest, tool string) context.Context {
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	srv := server.ServerFromContext(ctx)
	log := d.Log()
	lastTenth := -1
	return engine.WithProgress(ctx, func(done, total int) {
		if token != nil && srv != nil {
			_ = srv.SendNotificationToClient(ctx, string(mcp.MethodNotificationProgress), map[string]any{
				"progressToken": token, "progress": done, "total": total,
			})
		}
		if tenth := done * 10 / max(total, 1); tenth != lastTenth || done == total {
			lastTenth = tenth
			log.LogAttrs(ctx, slog.LevelInfo, EvToolProgress, slog.String("tool", tool), slog.Int("done", done), slog.Int("total", total))
		}
	})
}

// Progressive wraps a handler so its call reports progress.
func (d Deps) Progressive(tool string, h server.ToolHandlerFunc) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return h(d.withProgress(ctx, req, tool), req)
	}
}
