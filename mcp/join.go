package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
	"github.com/crewlet/crewlet/ledger"
	"github.com/crewlet/crewlet/tools"
)

// MetaDataNode is the _meta key naming the data node that answered a call
// made through a node without data.
const MetaDataNode = "crewlet/data_node"

// DefaultAttemptTimeout bounds one data node's answer to a call from a
// node without data: past it the call is offered to another data node.
// It is well past a write's 5 s wait and a read's 2 s budget.
const DefaultAttemptTimeout = 20 * time.Second

// EstateHandler answers a data node's estate calls with s: each call is
// one JSON-RPC message, answered as /operator/mcp would answer it.
func EstateHandler(s *server.MCPServer) estate.Handler {
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

// Estate carries one call to a sound data node; *estate.Client is one.
type Estate interface {
	Call(ctx context.Context, body []byte, exclude ...string) (estate.Reply, error)
}

// JoinOptions tune a node without data.
type JoinOptions struct {
	// AttemptTimeout bounds one data node's answer (default
	// DefaultAttemptTimeout).
	AttemptTimeout time.Duration
}

// NewJoinedServer is `crewlet mcp --join URL`: a node without the data
// role. It offers the operator toolset of this build and sends each call
// to a sound data node over the estate service. A write the caller sent
// without op_id gets a key minted here, before its first attempt, so the
// call can be offered to another data node when one does not answer
// without ever running twice. A call refused for what the answering node
// is — its copy stalled, behind, evicted before appending, cut off from
// its broker's majority — is offered to the next data node; other
// refusals and every answer are returned as the data node gave them,
// with the node named in _meta.
func NewJoinedServer(es Estate, version string, logger *slog.Logger, o JoinOptions) *server.MCPServer {
	if o.AttemptTimeout <= 0 {
		o.AttemptTimeout = DefaultAttemptTimeout
	}
	logger = componentLogger(logger)
	s := newBareServer(version, logger)
	for _, t := range tools.Definitions(tools.Operator) {
		s.AddTool(t, joinForward(es, t, o, logger))
	}
	return s
}

// maxHolders bounds how many data nodes one call is offered to.
const maxHolders = 4

func joinForward(es Estate, t mcpgo.Tool, o JoinOptions, logger *slog.Logger) server.ToolHandlerFunc {
	_, takesOpID := t.InputSchema.Properties["op_id"]
	readOnly := t.Annotations.ReadOnlyHint != nil && *t.Annotations.ReadOnlyHint
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
		// Offering a call again is safe when it reads, or when it writes
		// under an op_id: the ledger answers a copy that already ran.
		again := readOnly || takesOpID
		var exclude []string
		var last *mcpgo.CallToolResult
		for range maxHolders {
			actx, cancel := context.WithTimeout(ctx, o.AttemptTimeout)
			reply, err := es.Call(actx, body, exclude...)
			cancel()
			var none *estate.NoDataNode
			var silent *estate.NoAnswer
			switch {
			case errors.As(err, &silent):
				if !again || ctx.Err() != nil {
					return tools.Refused(engine.Refuse(engine.CodeBrokerUnreachable,
						"data node %s took this call and did not answer in time; it may have run there. Read the object to see, and repeat a write with the op_id you brought, if any.", silent.Node)), nil
				}
				exclude = append(exclude, silent.Node)
				continue
			case errors.As(err, &none):
				if last != nil {
					// Every node left refused or is out of service: the
					// last data node's refusal is the answer.
					return last, nil
				}
				return tools.Refused(noDataNode(none)), nil
			case err != nil:
				return tools.Refused(engine.Refuse(engine.CodeBrokerUnreachable, "the call could not be sent to a data node: %v. Retry.", err)), nil
			}
			res, err := decodeToolResult(reply.Body)
			if err != nil {
				logger.ErrorContext(ctx, "estate_answer_unreadable", "tool", req.Params.Name, "data_node", reply.Node, engine.LogErr, err.Error())
				return tools.Refused(engine.Refuse(engine.CodeInternal, "data node %s answered something that is not a tool result (%v). A write may have landed there: read the object to see, and repeat a write with its op_id %s.", reply.Node, err, args["op_id"])), nil
			}
			res.Meta = mcpgo.NewMetaFromMap(map[string]any{MetaDataNode: reply.Node})
			if code, ok := movable(res); ok {
				logger.InfoContext(ctx, "estate_refusal_moved", "tool", req.Params.Name, "data_node", reply.Node, "refused", code)
				last = res
				exclude = append(exclude, reply.Node)
				continue
			}
			return res, nil
		}
		if last != nil {
			return last, nil
		}
		return tools.Refused(noDataNode(&estate.NoDataNode{})), nil
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

// movable reports a refusal about the answering node rather than the
// call: another data node may answer it. An eviction refusal that names
// a position is not: the record in the way holds the op_id on the log for
// the duplicate window, wherever it is sent.
func movable(res *mcpgo.CallToolResult) (string, bool) {
	m, ok := tools.RefusalOf(res)
	if !ok {
		return "", false
	}
	code, _ := m["refused"].(string)
	switch engine.Code(code) {
	case engine.CodeBehind, engine.CodeStalled, engine.CodeBelowFloor, engine.CodeFloorUnknown,
		engine.CodeDeferred, engine.CodeDeferredScopeUnknown, engine.CodeBrokerUnreachable,
		engine.CodeNoQuorum, engine.CodeWrongStream:
		return code, true
	case engine.CodeEvicted:
		_, positioned := m["position"]
		return code, !positioned
	}
	return "", false
}

// noDataNode is the refusal of a call no data node took.
func noDataNode(e *estate.NoDataNode) *engine.Refusal {
	if e.Unreachable != nil {
		return engine.Refuse(engine.CodeBrokerUnreachable, "the broker this node joined did not answer (%v). Retry; if it persists, check the brokers at the --join URL.", e.Unreachable)
	}
	r := engine.Refuse(engine.CodeNoDataNode, "%s. The call ran nowhere: retry after the hint; `crewlet retention status` on a data node names each node's standing.", e.Error())
	if len(e.OutOfService) > 0 {
		r = r.With("out_of_service", e.OutOfService)
	}
	return r
}
