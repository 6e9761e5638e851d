package tools

import (
	"context"
	"encoding/json"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Seat is the surface of seats (agents) calling tools inside turns: no
// op_id argument (ids derive from the unit of work), reads linearizable
// floored at the node's read-your-writes floors and the turn's trigger
// position, no level argument.
const Seat Surface = "seat"

// Units is the coordination register a seat's ids derive from:
// engine/turns implements it.
type Units interface {
	// Call returns the unit's start instant and the call's place among the
	// unit's distinct calls to the tool.
	Call(ctx context.Context, unit, tool, digest string) (time.Time, int, error)
}

// Floors is the node's read-your-writes floor table (engine/turns): one
// position per log, raised by every write the node makes and by the
// trigger a turn starts from; every seat read carries the floor on its
// own domain's log.
type Floors interface {
	// Floor is the floor on stream's log, nil where there is none.
	Floor(stream string) *engine.Position
	// Raise raises the floor on p's log to p.
	Raise(p engine.Position)
	// All is every log's floor.
	All() []engine.Position
}

// The _meta keys of a seat's call: the turn where a transport has no
// headers (stdio), and what a node sending a seat's call on to another
// adds (the floors it carries, the node running the turn).
const (
	MetaSeat            = "crewlet/seat"
	MetaUnit            = "crewlet/unit"
	MetaTriggerPosition = "crewlet/trigger_position"
	// MetaFloors is the sending node's floors, one position token a log.
	MetaFloors = "crewlet/floors"
	// MetaVia names the node running the turn (one without data that
	// sent the call on): the node that holds the seat.
	MetaVia = "crewlet/via"
)

// Turn is what a seat's request carries (the Crewlet-* headers, or the
// crewlet/* _meta keys).
type Turn struct {
	Seat string
	Unit string
	// Trigger is the position of the change that woke the turn, if any.
	Trigger *engine.Position
	// Floors are floors a node that sent the call on carries with it.
	Floors []engine.Position
	// Via is the node running the turn when it is not this one.
	Via string
}

type turnKey struct{}

// WithTurn puts a seat request's turn into ctx (the seat MCP handler does).
func WithTurn(ctx context.Context, t Turn) context.Context {
	return context.WithValue(ctx, turnKey{}, t)
}

// TurnFrom returns the turn a request carries.
func TurnFrom(ctx context.Context) (Turn, bool) {
	t, ok := ctx.Value(turnKey{}).(Turn)
	return t, ok
}

// Meta is t as the _meta keys of a call sent on to another node, with
// the sending node's floors and its name (via, empty for none).
func (t Turn) Meta(floors []engine.Position, via string) map[string]any {
	m := map[string]any{MetaSeat: t.Seat, MetaUnit: t.Unit}
	if t.Trigger != nil {
		m[MetaTriggerPosition] = t.Trigger.Token()
	}
	var toks []string
	for _, f := range append(append([]engine.Position{}, t.Floors...), floors...) {
		toks = append(toks, f.Token())
	}
	if len(toks) > 0 {
		m[MetaFloors] = toks
	}
	if via != "" {
		m[MetaVia] = via
	} else if t.Via != "" {
		m[MetaVia] = t.Via
	}
	return m
}

// TurnOfMeta reads a turn from a call's _meta; ok is false where the
// call names no seat (it is no seat's call), and a refusal says what in
// it cannot be read.
func TurnOfMeta(meta map[string]any) (t Turn, ok bool, r *engine.Refusal) {
	str := func(k string) (string, *engine.Refusal) {
		v, has := meta[k]
		if !has || v == nil {
			return "", nil
		}
		s, isStr := v.(string)
		if !isStr {
			return "", engine.Refuse(engine.CodeInvalidArgument, "_meta %s is %s, not a string.", k, jsonType(v))
		}
		return s, nil
	}
	if t.Seat, r = str(MetaSeat); r != nil || t.Seat == "" {
		return t, false, r
	}
	if t.Unit, r = str(MetaUnit); r != nil {
		return t, true, r
	}
	if t.Via, r = str(MetaVia); r != nil {
		return t, true, r
	}
	tok, r := str(MetaTriggerPosition)
	if r != nil {
		return t, true, r
	}
	if tok != "" {
		p, err := engine.ParsePosition(tok)
		if err != nil {
			return t, true, engine.Refuse(engine.CodeInvalidArgument, "_meta %s: %v; send the position the wake carried, as <stream>@<generation>:<sequence>.", MetaTriggerPosition, err)
		}
		t.Trigger = &p
	}
	if raw, has := meta[MetaFloors]; has && raw != nil {
		list, isList := raw.([]any)
		if !isList {
			return t, true, engine.Refuse(engine.CodeInvalidArgument, "_meta %s is %s, not a list of position tokens.", MetaFloors, jsonType(raw))
		}
		for _, v := range list {
			s, _ := v.(string)
			p, err := engine.ParsePosition(s)
			if err != nil {
				return t, true, engine.Refuse(engine.CodeInvalidArgument, "_meta %s holds %v, not a position token (%v).", MetaFloors, v, err)
			}
			t.Floors = append(t.Floors, p)
		}
	}
	return t, true, nil
}

func jsonType(v any) string {
	b, _ := json.Marshal(v)
	return JSONType(b)
}

// seatWrite fills a seat's write options: the id derives from the unit,
// its start instant, the verb, the object, the argument digest and how
// many different calls to the same tool the unit made first.
func (d Deps) seatWrite(ctx context.Context, tool string, w engine.WriteOptions) (engine.WriteOptions, error) {
	t, ok := TurnFrom(ctx)
	if !ok || t.Unit == "" {
		return w, engine.Refuse(engine.CodeInvalidArgument, "a seat's call carries the Crewlet-Unit header (or _meta %s) naming its unit of work; send it with every request.", MetaUnit)
	}
	if d.Units == nil {
		return w, engine.Refuse(engine.CodeInternal, "this node keeps no units of work, so it cannot derive a seat's operation id.")
	}
	start, n, err := d.Units.Call(ctx, t.Unit, tool, w.Digest)
	if err != nil {
		return w, engine.Refuse(engine.CodeBrokerUnreachable, "the unit of work %s could not be read from the coordination store (%v); retry the same call.", Quote(t.Unit), err)
	}
	w.OpID, w.Unit, w.UnitStart, w.CallIndex = "", t.Unit, start, n
	return w, nil
}

// SeatFloor is a seat read's floor on one domain's log (its stream): the
// highest of the node's floor table, the request's trigger position and
// the floors a sending node carried, where each is on that log. The
// trigger a turn started from (start_turn) is in the table already, so
// the turn's later reads carry it without the caller sending it again. A
// floor on one log never holds up a read of another.
func (d Deps) SeatFloor(ctx context.Context, stream string) *engine.Position {
	t, _ := TurnFrom(ctx)
	var floor *engine.Position
	if d.Floors != nil {
		floor = d.Floors.Floor(stream)
	}
	for _, p := range append([]engine.Position{t.derefTrigger()}, t.Floors...) {
		if p.Stream == stream && !p.IsZero() {
			floor = higher(floor, p)
		}
	}
	return floor
}

func (t Turn) derefTrigger() engine.Position {
	if t.Trigger == nil {
		return engine.Position{}
	}
	return *t.Trigger
}

// higher is the later of a floor and a position on one log: the later
// generation's, else the greater sequence.
func higher(a *engine.Position, b engine.Position) *engine.Position {
	if a == nil || b.Generation > a.Generation || b.Generation == a.Generation && b.Seq > a.Seq {
		return &b
	}
	return a
}

// RefusalOfTurn is a turn that cannot be used: no seat or no unit.
func RefusalOfTurn(t Turn) *engine.Refusal {
	if t.Seat == "" || t.Unit == "" {
		return engine.Refuse(engine.CodeInvalidArgument, "a seat's call names its seat and its unit of work: the headers Crewlet-Seat and Crewlet-Unit over HTTP, or the _meta keys %s and %s; send both with every call.", MetaSeat, MetaUnit)
	}
	return nil
}
