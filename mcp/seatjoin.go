package mcp

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// nextHolder sends a seat's call on to the next data node through fw
// when this node refused it in a way that proves it ran nowhere here
// (behind past the read budget, stalled, out of service: the code
// table's Elsewhere column), carrying the turn and this node's floors in
// the call's _meta, and naming this node as the one running the turn
// (so the node it reaches does not send it on again). A turn's start and
// end (stay) are never sent on: a node that is not level claims no new
// seat, and the answer says so. When no other node takes the call, this
// node's refusal is the answer.
func nextHolder(fw Forwarder, fl tools.Floors, self string, stay map[string]bool, logger *slog.Logger) server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			res, err := next(ctx, req)
			if err != nil || res == nil || !res.IsError || stay[req.Params.Name] {
				return res, err
			}
			t, _ := tools.TurnFrom(ctx)
			if t.Via != "" {
				return res, nil // sent here by another node, which moves it itself
			}
			ref := refusalOfResult(res)
			if ref == nil || !engine.TryElsewhere(ref) {
				return res, nil
			}
			out, node, ferr := sendOn(ctx, fw, req, t.Meta(floorsOf(fl), self), true)
			if ferr != nil {
				logger.InfoContext(ctx, "seat_next_holder_none", "tool", req.Params.Name, "refused", string(ref.Code), engine.LogErr, ferr.Error())
				return res, nil
			}
			logger.InfoContext(ctx, "seat_next_holder", "tool", req.Params.Name, "refused", string(ref.Code), "data_node", node)
			out.Meta = mcpgo.NewMetaFromMap(map[string]any{MetaDataNode: node})
			return out, nil
		}
	}
}

func floorsOf(fl tools.Floors) []engine.Position {
	if fl == nil {
		return nil
	}
	return fl.All()
}

// NewJoinedSeatServer is the seat surface of a node without the data
// role (`crewlet mcp --join URL --seat`): the seat toolset of this build
// (c, its catalogue over no service), every call naming its turn in its
// _meta (tools.MetaSeat, tools.MetaUnit, and tools.MetaTriggerPosition
// where a wake carried one). Each call is sent through fw to a sound data
// node with the turn, this node's floors and its name (node, the seat's
// holder) in its _meta; the trigger a turn starts from (once the data
// node found it on its log) and the position every write answers raise
// this node's floors, so the turn's later reads, on
// whichever data node answers them, are never from before either. A
// call is offered to another data node when one does not answer, but a
// turn's start (which records an attempt) only when it is sure it ran
// nowhere.
func NewJoinedSeatServer(fw Forwarder, c tools.Catalogue, floors tools.Floors, node, version string, logger *slog.Logger) *server.MCPServer {
	logger = componentLogger(logger)
	s, listed := newToolServer(version,
		server.WithToolCapabilities(false),
		server.WithInstructions(seatInstructions),
		server.WithToolHandlerMiddleware(recovery(logger)),
		server.WithToolHandlerMiddleware(seatTurn()),
	)
	var ts []server.ServerTool
	seatOnly := c.SeatOnly()
	for _, t := range c.Definitions(tools.Seat, tools.Filter{}) {
		idem := t.Annotations.IdempotentHint != nil && *t.Annotations.IdempotentHint
		// A seat's write derives its op id from the unit: sent again, the
		// ledger answers a copy that already ran. A turn's start records
		// an attempt each time, so it is sent again only when idempotent.
		resendable := !seatOnly[t.Name] || idem
		ts = append(ts, server.ServerTool{Tool: t, Handler: joinSeatForward(fw, floors, node, resendable, logger)})
	}
	s.AddTools(listed.slim(ts)...)
	return s
}

func joinSeatForward(fw Forwarder, floors tools.Floors, node string, resendable bool, logger *slog.Logger) server.ToolHandlerFunc {
	return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
		t, _ := tools.TurnFrom(ctx)
		res, dn, err := sendOn(ctx, fw, req, t.Meta(floors.All(), node), resendable)
		if err != nil {
			return tools.Failed(ctx, logger, req.Params.Name, "", err), nil
		}
		if m, ok := res.StructuredContent.(map[string]any); ok && !res.IsError {
			raiseFrom(floors, m)
		}
		res.Meta = mcpgo.NewMetaFromMap(map[string]any{MetaDataNode: dn})
		return res, nil
	}
}

// raiseFrom raises floors from a joined seat's answer: a write's
// position, and a turn's start's floors (the trigger the data node
// checked against its log, among them).
func raiseFrom(floors tools.Floors, answer map[string]any) {
	raise := func(v any) {
		if tok, _ := v.(string); tok != "" {
			if p, err := engine.ParsePosition(tok); err == nil {
				floors.Raise(p)
			}
		}
	}
	raise(answer["position"])
	if fl, ok := answer["floors"].(map[string]any); ok {
		for _, v := range fl {
			raise(v)
		}
	}
}

// sendOn sends the call req, with meta as its _meta, through fw to a
// data node and answers its tool result and the node that gave it; an
// error is a refusal (no node took it, or one took it and did not answer)
// or an answer that is not a tool result.
func sendOn(ctx context.Context, fw Forwarder, req mcpgo.CallToolRequest, meta map[string]any, resendable bool) (*mcpgo.CallToolResult, string, error) {
	args, err := callArguments(req)
	if err != nil {
		return nil, "", engine.Refuse(engine.CodeInvalidArgument, "the arguments are not a JSON object (%v); send the tool's arguments as an object.", err)
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": req.Params.Name, "arguments": args, "_meta": meta}})
	if err != nil {
		return nil, "", err
	}
	node, answer, err := fw.Forward(ctx, body, resendable, answerRefusal)
	if err != nil {
		return nil, "", err
	}
	res, err := decodeToolResult(answer)
	if err != nil {
		return nil, node, fmt.Errorf("data node %s answered something that is not a tool result: %w", node, err)
	}
	return res, node, nil
}

// EstateHandlers is EstateHandler for a data node serving both surfaces
// to nodes without data: a call whose _meta names a seat (tools.MetaSeat)
// is answered by seat, as /seat/mcp would answer it; every other by
// operator. A nil seat answers every call with operator.
func EstateHandlers(operator, seat *server.MCPServer) func(ctx context.Context, body []byte) []byte {
	op, st := EstateHandler(operator), EstateHandler(seat)
	if seat == nil {
		return op
	}
	return func(ctx context.Context, body []byte) []byte {
		var call struct {
			Params struct {
				Meta map[string]any `json:"_meta"`
			} `json:"params"`
		}
		if json.Unmarshal(body, &call) == nil {
			if s, _ := call.Params.Meta[tools.MetaSeat].(string); s != "" {
				return st(ctx, body)
			}
		}
		return op(ctx, body)
	}
}
