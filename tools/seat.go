package tools

import (
	"context"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Seat is the surface of seats (agents) calling tools inside turns: no
// op_id argument (ids derive from the unit of work), reads linearizable
// floored at the turn's trigger position, no level argument.
const Seat Surface = "seat"

// Units is the coordination register a seat's ids derive from:
// engine/turns implements it.
type Units interface {
	// Call returns the unit's start instant and the call's place among the
	// unit's distinct calls to the tool.
	Call(ctx context.Context, unit, tool, digest string) (time.Time, int, error)
}

// Turn is what a seat's request carries (the Crewlet-* headers).
type Turn struct {
	Seat string
	Unit string
	// Trigger is the position of the change that woke the turn, if any.
	Trigger *engine.Position
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

// seatWrite fills a seat's write options: the id derives from the unit,
// its start instant, the verb, the object, the argument digest and how
// many different calls to the same tool the unit made first.
func (d Deps) seatWrite(ctx context.Context, tool string, w engine.WriteOptions) (engine.WriteOptions, error) {
	t, ok := TurnFrom(ctx)
	if !ok || t.Unit == "" {
		return w, engine.Refuse(engine.CodeInvalidArgument, "a seat's call carries the Crewlet-Unit header naming its unit of work; send it with every request.")
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

// seatFloor is a seat read's floor on one domain's log (its stream): the
// trigger position where it is on that log. A floor on one log never
// holds up a read of another.
func seatFloor(ctx context.Context, stream string) *engine.Position {
	t, ok := TurnFrom(ctx)
	if !ok || t.Trigger == nil || t.Trigger.Stream != stream {
		return nil
	}
	p := *t.Trigger
	return &p
}
