package mcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// NewRemoteServer is `crewlet mcp --node URL`: it connects an MCP client to
// a running node's operator MCP at url with the bearer token, lists the
// node's tools and returns a local server offering the same tools, each
// call forwarded to the node and its result returned unchanged (content,
// structured content, isError). The returned func closes the connection.
func NewRemoteServer(ctx context.Context, url, token string, version string, logger *slog.Logger) (*server.MCPServer, func() error, error) {
	logger = componentLogger(logger).With(slog.String("node", url))
	c, err := client.NewStreamableHttpClient(url,
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}),
		transport.WithHTTPLogger(logger),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("mcp client for %s: %w", url, err)
	}
	if err := c.Start(ctx); err != nil {
		_ = c.Close()
		return nil, nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	init := mcpgo.InitializeRequest{}
	init.Params.ClientInfo = mcpgo.Implementation{Name: ServerName + "-mcp-proxy", Version: version}
	if _, err := c.Initialize(ctx, init); err != nil {
		_ = c.Close()
		return nil, nil, remoteErr(url, "initialize", err)
	}
	list, err := c.ListTools(ctx, mcpgo.ListToolsRequest{})
	if err != nil {
		_ = c.Close()
		return nil, nil, remoteErr(url, "list tools", err)
	}

	s, listed := newBareServer(version, logger)
	ts := make([]server.ServerTool, 0, len(list.Tools))
	for _, t := range list.Tools {
		ts = append(ts, server.ServerTool{Tool: t, Handler: forward(c, url, logger)})
	}
	s.AddTools(listed.slim(ts)...)
	logger.InfoContext(ctx, "mcp_remote_connected", slog.Int("tools", len(list.Tools)))
	return s, c.Close, nil
}

func remoteErr(url, what string, err error) error {
	if errors.Is(err, transport.ErrAuthorizationRequired) || errors.Is(err, transport.ErrUnauthorized) {
		return fmt.Errorf("%s at %s: the node refused the token (401); pass the node's operator token: %w", what, url, err)
	}
	return fmt.Errorf("%s at %s: %w", what, url, err)
}

// forward calls the same tool on the node with the same arguments (the
// bytes off the wire where kept) and answers the node's result as is. Only
// the protocol envelope (result type, _meta naming the node's server) is
// left for the local server to fill in.
func forward(c *client.Client, url string, logger *slog.Logger) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		var out mcpgo.CallToolRequest
		out.Params.Name = req.Params.Name
		out.Params.Arguments = req.Params.Arguments
		out.Params.RawArguments = req.Params.RawArguments
		res, err := c.CallTool(ctx, out)
		if err != nil {
			logger.ErrorContext(ctx, "mcp_remote_call_failed",
				slog.String("tool", req.Params.Name), slog.String(engine.LogErr, err.Error()))
			return tools.Refused(engine.Refuse(engine.CodeInternal,
				"The node at %s did not answer this call. A write may or may not have landed there: read the object to see, and repeat a write with the op_id you brought, if any.", url)), nil
		}
		res.Meta = nil
		res.ResultType = ""
		return res, nil
	}
}
