package mcp

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"unicode"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/tools"
)

// The headers every seat request carries over HTTP. A transport with no
// headers (stdio, a call sent on to another node) carries the same in the
// call's _meta: tools.MetaSeat, tools.MetaUnit, tools.MetaTriggerPosition.
const (
	HeaderSeat            = "Crewlet-Seat"
	HeaderUnit            = "Crewlet-Unit"
	HeaderTriggerPosition = "Crewlet-Trigger-Position"
)

// MaxSeatBytes bounds a seat's name (Crewlet-Seat).
const MaxSeatBytes = 128

const seatInstructions = "Crewlet is a replicated work tracker. You call its tools inside a turn: start it with start_turn, end it with end_turn. Reads see every write made before them and the change that woke you. " +
	"Writes need no op_id: a re-run of this turn that repeats the same call with exactly the same arguments writes nothing twice; a call you word differently is a new write. " +
	"Every write answers an outcome: applied; pending (durable, do not retry); unknown (repeat exactly the same call). " +
	"Every answer's text is its JSON object. A refusal is a result with isError whose text is the JSON object {refused, message, retry_after_seconds?}: do what the message says."

// NewSeatServer builds the seat MCP server over a catalogue bound to the
// node's services: the seat toolset, whose ids derive from the unit of
// work in units.
func NewSeatServer(units tools.Units, version string, logger *slog.Logger, c tools.Catalogue) *server.MCPServer {
	return NewSeat(units, Options{Version: version, Logger: logger}, c)
}

// NewSeat is NewSeatServer with options: the seat toolset narrowed by
// o.Filter, with the resources (read as a seat reads: floored at the
// turn's trigger), prompts and completions. Its reads carry o.Floors;
// a call this node refuses in a way that proves it ran nowhere here goes
// to the next holder through o.NextHolder. The seat surface is
// stateless, so it keeps no subscription and sends no log line: o.Applied
// and o.Logs are not used.
func NewSeat(units tools.Units, o Options, c tools.Catalogue) *server.MCPServer {
	o.Applied, o.Logs = nil, nil
	d := tools.Deps{Logger: o.Logger, Surface: tools.Seat, Units: units, Floors: o.Floors, Filter: o.Filter, Calls: o.Calls}
	mw := []server.ToolHandlerMiddleware{seatTurn()}
	if o.NextHolder != nil {
		mw = append(mw, nextHolder(o.NextHolder, o.Floors, o.Node, c.SeatOnly(), componentLogger(o.Logger)))
	}
	return build(c, d, o, seatInstructions, mw...)
}

// SeatHandler is /seat/mcp over Streamable HTTP: stateless (a seat
// relies on no MCP session), every request refused 400 unless it names
// its seat and unit, and its trigger position, when sent, parses. The
// mount puts the operator guard in front of it.
func SeatHandler(s *server.MCPServer, logger *slog.Logger) http.Handler {
	logger = componentLogger(logger).With(slog.String("surface", "seat"))
	h := server.NewStreamableHTTPServer(s,
		server.WithStateLess(true),
		server.WithDisableLocalhostProtection(true),
		server.WithStreamableHTTPLogger(logger),
		server.WithHTTPContextFunc(func(ctx context.Context, r *http.Request) context.Context {
			t := tools.Turn{Seat: r.Header.Get(HeaderSeat), Unit: r.Header.Get(HeaderUnit)}
			if tok := r.Header.Get(HeaderTriggerPosition); tok != "" {
				if p, err := engine.ParsePosition(tok); err == nil {
					t.Trigger = &p
				}
			}
			return tools.WithTurn(ctx, t)
		}),
	)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(HeaderSeat) == "" || r.Header.Get(HeaderUnit) == "" {
			writeRefusal(w, http.StatusBadRequest, string(engine.CodeInvalidArgument),
				"a seat request carries the headers Crewlet-Seat (the seat) and Crewlet-Unit (its unit of work); send both with every request.")
			return
		}
		if seat := r.Header.Get(HeaderSeat); len(seat) > MaxSeatBytes || strings.ContainsFunc(seat, unicode.IsControl) {
			writeRefusal(w, http.StatusBadRequest, string(engine.CodeInvalidArgument),
				fmt.Sprintf("Crewlet-Seat names the seat in at most %d bytes and no control character (records and the usage history name it); send its name.", MaxSeatBytes))
			return
		}
		if tok := r.Header.Get(HeaderTriggerPosition); tok != "" {
			if _, err := engine.ParsePosition(tok); err != nil {
				writeRefusal(w, http.StatusBadRequest, string(engine.CodeInvalidArgument),
					"Crewlet-Trigger-Position: "+err.Error()+"; send the position the wake carried, as <stream>@<generation>:<sequence>.")
				return
			}
		}
		h.ServeHTTP(w, r)
	})
}

// seatTurn puts the turn a call names in its _meta into ctx, where no
// header put one there (stdio, a call sent on from another node), and
// refuses a call naming none, or naming another than its headers.
func seatTurn() server.ToolHandlerMiddleware {
	return func(next server.ToolHandlerFunc) server.ToolHandlerFunc {
		return func(ctx context.Context, req mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error) {
			byMeta, named, r := tools.TurnOfMeta(metaOf(req))
			if r != nil {
				return tools.Refused(r), nil
			}
			t, byHeader := tools.TurnFrom(ctx)
			switch {
			case named && byHeader && (t.Seat != byMeta.Seat || t.Unit != byMeta.Unit):
				return tools.Refused(engine.Refuse(engine.CodeInvalidArgument, "the call's _meta names seat %s, unit %s, and its headers seat %s, unit %s; name one turn, once.",
					tools.Quote(byMeta.Seat), tools.Quote(byMeta.Unit), tools.Quote(t.Seat), tools.Quote(t.Unit))), nil
			case named && byHeader:
				byMeta.Trigger = higherTrigger(t.Trigger, byMeta.Trigger)
				t = byMeta
			case named:
				t = byMeta
			}
			if r := tools.RefusalOfTurn(t); r != nil {
				return tools.Refused(r), nil
			}
			return next(tools.WithTurn(ctx, t), req)
		}
	}
}

// higherTrigger is the header's trigger unless the _meta names one.
func higherTrigger(header, meta *engine.Position) *engine.Position {
	if meta != nil {
		return meta
	}
	return header
}

// metaOf is a call's _meta as a map, empty for none.
func metaOf(req mcpgo.CallToolRequest) map[string]any {
	if req.Params.Meta == nil || req.Params.Meta.AdditionalFields == nil {
		return map[string]any{}
	}
	return req.Params.Meta.AdditionalFields
}
