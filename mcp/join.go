package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/ledger"
	"github.com/crewlet/crewlet/tools"
)

// MetaDataNode is the _meta key naming the data node that answered a call
// made through a node without data.
const MetaDataNode = "crewlet/data_node"

// EstateHandler answers a data node's estate calls with s: each call is
// one JSON-RPC message, answered as /operator/mcp would answer it. Its
// type is the engine's estate.Handler, spelled out so this package names
// no engine internal.
func EstateHandler(s *server.MCPServer) func(ctx context.Context, body []byte) []byte {
	return func(ctx context.Context, body []byte) []byte {
		resp := s.HandleMessage(ctx, body)
		if resp == nil {
			return nil
		}
		b, err := json.Marshal(resp)
		if err != nil {
			return nil
		}
		return b
	}
}

// Forwarder carries a call of a node without data to a sound data node
// and back; the engine's estate client is one (cmd wires it). It alone
// decides where a call goes: it moves to another data node when one has
// gone, is out of service, or answers a refusal that refusal reads and
// the engine's code table marks as proving the call ran nowhere there
// (engine.TryElsewhere); after a node took the call and gave no answer it
// offers it again only when resendable.
type Forwarder interface {
	// Forward sends body, one JSON-RPC message, and returns the node that
	// answered and its answer; its error is an *engine.Refusal saying no
	// data node took the call, or one took it and may have run it.
	Forward(ctx context.Context, body []byte, resendable bool, refusal func(answer []byte) *engine.Refusal) (node string, answer []byte, err error)
}

// NewJoinedServer is `crewlet mcp --join URL`: a node without the data
// role. It offers the operator toolset of this build (c, its catalogue
// over no service) and forwards each
// call to a sound data node through fw, which chooses the node. A write
// the caller sent without op_id gets one minted here, before it is first
// sent, so fw may offer it to another data node when one does not answer
// without its ever running twice. Every answer is returned as the data
// node gave it, with the node named in _meta.
func NewJoinedServer(fw Forwarder, c tools.Catalogue, version string, logger *slog.Logger) *server.MCPServer {
	logger = componentLogger(logger)
	s, listed := newBareServer(version, logger)
	var ts []server.ServerTool
	for _, t := range c.Definitions(tools.Operator, tools.Filter{}) {
		ts = append(ts, server.ServerTool{Tool: t, Handler: joinForward(fw, t, logger)})
	}
	s.AddTools(listed.slim(ts)...)
	return s
}

func joinForward(fw Forwarder, t mcpgo.Tool, logger *slog.Logger) server.ToolHandlerFunc {
	_, takesOpID := t.InputSchema.Properties["op_id"]
	readOnly := t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
	// Sending a call again is safe when it reads, or when it writes under
	// an op_id: the ledger answers a copy that already ran.
	resendable := readOnly || takesOpID
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		args, err := callArguments(req)
		if err != nil {
			return tools.Refused(engine.Refuse(engine.CodeInvalidArgument, "the arguments are not a JSON object (%v); send the tool's arguments as an object.", err)), nil
		}
		if takesOpID {
			if v, given := args["op_id"]; !given || bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
				u, err := ledger.NewV7At(time.Now())
				if err != nil {
					return tools.Internal(), nil
				}
				id, err := json.Marshal(u.String())
				if err != nil {
					return tools.Internal(), nil
				}
				args["op_id"] = id
			}
		}
		body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
			"params": map[string]any{"name": req.Params.Name, "arguments": args}})
		if err != nil {
			return tools.Internal(), nil
		}
		node, answer, err := fw.Forward(ctx, body, resendable, answerRefusal)
		if err != nil {
			// A refusal as itself; anything else is logged and answered
			// internal.
			return tools.Failed(ctx, logger, req.Params.Name, "", err), nil
		}
		res, err := decodeToolResult(answer)
		if err != nil {
			logger.ErrorContext(ctx, "estate_answer_unreadable", "tool", req.Params.Name, "data_node", node, engine.LogErr, err.Error())
			return tools.Refused(engine.Refuse(engine.CodeInternal, "data node %s answered something that is not a tool result (%v). A write may have landed there: read the object to see, and repeat a write with its op_id %s.", node, err, args["op_id"])), nil
		}
		res.Meta = mcpgo.NewMetaFromMap(map[string]any{MetaDataNode: node})
		return res, nil
	}
}

// callArguments are the call's arguments as an object of raw values: the
// bytes off the wire where kept, so the data node checks the text the
// caller sent (decoding to Go strings would turn bytes that are not UTF-8,
// and lone surrogate escapes, into U+FFFD before any check saw them).
func callArguments(req mcpgo.CallToolRequest) (map[string]json.RawMessage, error) {
	args := map[string]json.RawMessage{}
	if raw := req.Params.RawArguments; len(raw) > 0 && string(raw) != "null" {
		if err := json.Unmarshal(raw, &args); err != nil {
			return nil, err
		}
		return args, nil
	}
	if m, ok := req.Params.Arguments.(map[string]any); ok {
		for k, v := range m {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, err
			}
			args[k] = b
		}
	}
	return args, nil
}

// decodeToolResult reads a JSON-RPC response carrying a tool result.
func decodeToolResult(body []byte) (*mcpgo.CallToolResult, error) {
	var resp struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &resp); err != nil {
		return nil, err
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("JSON-RPC error %d: %s", resp.Error.Code, resp.Error.Message)
	}
	var res mcpgo.CallToolResult
	if err := json.Unmarshal(resp.Result, &res); err != nil {
		return nil, err
	}
	res.ResultType = ""
	return &res, nil
}

// answerRefusal reads the refusal a data node's answer carries, nil for
// a success or for an answer that is not a tool result (which is the
// call's answer, reported unreadable, never a reason to move). A refusal
// naming a position keeps one, even one it cannot read: a position may
// name a record the call left on the log, and only its presence decides.
func answerRefusal(answer []byte) *engine.Refusal {
	res, err := decodeToolResult(answer)
	if err != nil {
		return nil
	}
	return refusalOfResult(res)
}

// refusalOfResult is the refusal a tool result carries, nil for a
// success.
func refusalOfResult(res *mcpgo.CallToolResult) *engine.Refusal {
	m, ok := tools.RefusalOf(res)
	if !ok {
		return nil
	}
	code, _ := m["refused"].(string)
	msg, _ := m["message"].(string)
	r := &engine.Refusal{Code: engine.Code(code), Message: msg}
	if p, named := m["position"]; named && p != nil {
		r.Position = &engine.Position{}
		if b, err := json.Marshal(p); err == nil {
			_ = json.Unmarshal(b, r.Position)
		}
	}
	return r
}
