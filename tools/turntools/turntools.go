// Package turntools is a seat's turn tools (the turns toolset), on the
// seat surface alone: start_turn, which starts a turn of the call's unit
// of work (its seat claimed or kept on the node, its trigger handed to
// the node's read-your-writes floors) and answers the turn-start
// knowledge block, and end_turn, which ends it with an outcome. The turn
// itself (seat, unit, trigger position) travels as every seat call's
// does: the Crewlet-* headers, or the crewlet/* _meta keys.
package turntools

import (
	"context"
	"sort"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/turns"
	"github.com/crewlet/crewlet/tools"
)

// Desk starts and ends turns; *node.Node is one.
type Desk interface {
	StartTurn(ctx context.Context, seat, unit, via string, trigger *engine.Position) (turns.Opened, error)
	EndTurn(ctx context.Context, unit, outcome, summary string) (turns.Turn, error)
}

// Knowledge is the knowledge base's ranked search (*kb.Service).
type Knowledge interface {
	SearchKnowledge(ctx context.Context, r engine.ReadOptions, q kb.SearchQuery) (kb.SearchResult, error)
}

// Names of the turn tools.
const (
	NameStartTurn = "start_turn"
	NameEndTurn   = "end_turn"
)

// Name is the toolset's name (--toolsets turns).
const Name = "turns"

// DefaultKnowledge is how many pages the knowledge block holds unless
// knowledge_limit says otherwise; MaxKnowledge the most it may ask.
const (
	DefaultKnowledge = 5
	MaxKnowledge     = 20
)

// Toolset is the turn tools over desk, with the knowledge block searched
// in know (nil: the node runs no knowledge base, and a block asked for is
// refused). Toolset(nil, nil) builds the definitions alone.
func Toolset(desk Desk, know Knowledge) tools.Toolset {
	d := env{desk: desk, know: know}
	has := func() bool { return desk != nil }
	return tools.Toolset{Name: Name, Entries: []tools.Entry{
		{Build: d.bind(startTurn), SeatOnly: true, Needs: has},
		{Build: d.bind(endTurn), SeatOnly: true, Needs: has},
	}}
}

type env struct {
	tools.Deps
	desk Desk
	know Knowledge
}

func (d env) bind(f func(env) (mcp.Tool, server.ToolHandlerFunc)) tools.Constructor {
	return func(deps tools.Deps) (mcp.Tool, server.ToolHandlerFunc) {
		d.Deps = deps
		return f(d)
	}
}

// check refuses a turn tool off the seat surface or on a node that keeps
// no turns. The tools change the coordination store, not a log, so they
// take no op id: a turn's start records an attempt, its end is once.
func (d env) check(name string) func(tools.Args) *engine.Refusal {
	return func(tools.Args) *engine.Refusal {
		if d.Surface != tools.Seat || d.desk == nil {
			return engine.Refuse(engine.CodeInvalidArgument, "%s is a seat's tool, on /seat/mcp of a node that keeps turns.", name)
		}
		return nil
	}
}

// Start answers start_turn.
type Start struct {
	Turn turns.Opened `json:"turn"`
	// Level is the level every read of the turn is served at: the seat
	// surface's, never the caller's.
	Level engine.ReadLevel `json:"level"`
	// Floors are the positions the turn's reads carry, one a log (the
	// node's floors, the trigger among them): no read of the turn
	// answers from before them.
	Floors map[string]string `json:"floors"`
	// Knowledge is the turn-start knowledge block, null when start_turn
	// named no query.
	Knowledge *Block `json:"knowledge"`
}

// Block is the turn-start knowledge block: the pages ranked best for the
// query, read at linearizable. Like every ranked search it carries no
// floor (the index is built behind each node's own rows), so a page
// created a moment ago may be missing: find it by its id or by listing.
type Block struct {
	Query string `json:"query"`
	Space string `json:"space,omitempty"`
	kb.SearchResult
}

// End answers end_turn.
type End struct {
	Turn turns.Turn `json:"turn"`
}

var (
	triggerParam = tools.Param{Name: "trigger_position", Kind: tools.KindString, MaxBytes: 128,
		Desc: "Optional. The position the wake carried (<stream>@<generation>:<sequence>), if a change to this tracker or knowledge base woke you; the Crewlet-Trigger-Position header is the same. Every read of the turn then sees that change."}
	queryParam = tools.Param{Name: "query", Kind: tools.KindString, MaxBytes: kb.MaxQueryBytes,
		Desc: "Optional. Words about the turn's work: the turn starts with the knowledge-base pages that match them best (the knowledge block). Leave it out for no block."}
	spaceParam = tools.Param{Name: "space", Kind: tools.KindString, MaxBytes: tools.MaxKeyBytes,
		Desc: "Optional. Search only this space's pages (its key, e.g. DOCS)."}
	limitParam = tools.Param{Name: "knowledge_limit", Kind: tools.KindInteger, Min: 1, Max: MaxKnowledge,
		Desc: "Optional. How many pages the knowledge block holds (default 5)."}
	outcomeParam = tools.Param{Name: "outcome", Kind: tools.KindString, Required: true, Enum: turns.Outcomes, MaxBytes: 16,
		Desc: "How the turn ended: done (its work is finished), failed (it could not finish), cancelled (it stopped on purpose)."}
	summaryParam = tools.Param{Name: "summary", Kind: tools.KindString, MaxBytes: 2000, Long: true,
		Desc: "Optional. A sentence or two on what the turn did, kept with the turn."}
)

// startTurn is start_turn {trigger_position, query, space, knowledge_limit}.
func startTurn(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{triggerParam, queryParam, spaceParam, limitParam}
	tool := tools.NewTool(NameStartTurn,
		"Start a turn of your unit of work (the Crewlet-Unit header): call it first, once per run. A run of the same unit again (after a crash) is a new turn whose calls, repeated exactly, are answered as the first run's, writing nothing twice. "+
			"It holds your seat on this node, hands the trigger position to the node's floors so every read of the turn sees what woke you, and answers the knowledge block: the pages best matching query.",
		params, tools.WriteAnnotations("Start turn", false), tools.OutputSchema[Start]())
	return tool, d.ReadHandler(NameStartTurn, params, d.check(NameStartTurn), func(ctx context.Context, a tools.Args) (any, error) {
		t, _ := tools.TurnFrom(ctx)
		trigger, r := triggerOf(t, a.Str("trigger_position"))
		if r != nil {
			return nil, r
		}
		var block *Block
		if q := a.Str("query"); q != "" {
			if d.know == nil {
				return nil, engine.Refuse(engine.CodeInvalidArgument, "this node runs no knowledge base, so start_turn has no knowledge block to answer; leave query out.")
			}
			limit := int(a.Uint("knowledge_limit"))
			if limit == 0 {
				limit = DefaultKnowledge
			}
			// Linearizable, and no floor: a ranked search reads an index
			// no log position describes.
			res, err := d.know.SearchKnowledge(ctx, engine.ReadOptions{Level: engine.Linearizable}, kb.SearchQuery{Query: q, Space: a.Str("space"), Limit: limit})
			if err != nil {
				return nil, err
			}
			block = &Block{Query: q, Space: a.Str("space"), SearchResult: res}
		}
		opened, err := d.desk.StartTurn(ctx, t.Seat, t.Unit, t.Via, trigger)
		if err != nil {
			return nil, err
		}
		t.Trigger = trigger
		return Start{Turn: opened, Level: engine.Linearizable, Floors: floorsOf(d.Deps, t), Knowledge: block}, nil
	})
}

// triggerOf is the turn's trigger: the argument or the header (or
// _meta), which must agree where both are sent.
func triggerOf(t tools.Turn, arg string) (*engine.Position, *engine.Refusal) {
	if arg == "" {
		return t.Trigger, nil
	}
	p, err := engine.ParsePosition(arg)
	if err != nil {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "trigger_position: %v; send the position the wake carried, as <stream>@<generation>:<sequence>.", err).With("key", "trigger_position")
	}
	if t.Trigger != nil && *t.Trigger != p {
		return nil, engine.Refuse(engine.CodeInvalidArgument, "trigger_position %s and the Crewlet-Trigger-Position header %s name two wakes; send one.", p.Token(), t.Trigger.Token()).With("key", "trigger_position")
	}
	return &p, nil
}

// floorsOf are the floors the turn's reads carry, one a log: the node's
// table, the trigger and what a sending node carried.
func floorsOf(d tools.Deps, t tools.Turn) map[string]string {
	streams := map[string]bool{}
	if t.Trigger != nil {
		streams[t.Trigger.Stream] = true
	}
	for _, p := range t.Floors {
		streams[p.Stream] = true
	}
	if d.Floors != nil {
		for _, p := range d.Floors.All() {
			streams[p.Stream] = true
		}
	}
	names := make([]string, 0, len(streams))
	for s := range streams {
		names = append(names, s)
	}
	sort.Strings(names)
	out := map[string]string{}
	ctx := tools.WithTurn(context.Background(), t)
	for _, s := range names {
		if f := d.SeatFloor(ctx, s); f != nil {
			out[s] = f.Token()
		}
	}
	return out
}

// endTurn is end_turn {outcome, summary}.
func endTurn(d env) (mcp.Tool, server.ToolHandlerFunc) {
	params := []tools.Param{outcomeParam, summaryParam}
	tool := tools.NewTool(NameEndTurn,
		"End your turn (of the unit in the Crewlet-Unit header) with its outcome, once, when its work is done or cannot be. Calling it again with the same outcome and summary answers the same turn; with others it is refused conflict.",
		params, tools.WriteAnnotations("End turn", true), tools.OutputSchema[End]())
	return tool, d.ReadHandler(NameEndTurn, params, d.check(NameEndTurn), func(ctx context.Context, a tools.Args) (any, error) {
		t, _ := tools.TurnFrom(ctx)
		ended, err := d.desk.EndTurn(ctx, t.Unit, a.Str("outcome"), a.Str("summary"))
		if err != nil {
			return nil, err
		}
		return End{Turn: ended}, nil
	})
}
