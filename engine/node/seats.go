package node

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/turns"
)

// Floors is this node's read-your-writes floor table: every write the
// node answers at a position raises it (statelog.Config.OwnWrite), and
// so does the trigger position a turn on this node starts from.
func (n *Node) Floors() *turns.Floors { return n.ryw }

// SeatFloor is the floor a seat read on stream carries from this node's
// table, nil where there is none or it is in another generation than the
// one this node's rows are keyed to (a position from before a reanchor
// compares with nothing here).
func (n *Node) SeatFloor(stream string) *engine.Position {
	f := n.ryw.Floor(stream)
	if f == nil {
		return nil
	}
	for _, d := range n.domains {
		if d.spec.Stream == stream && d.replica != nil && d.replica.Generation() != f.Generation {
			return nil
		}
	}
	return f
}

// Level says why this node may claim no new seat now, nil when it may: a
// copy out of service (OutOfService), or one that has not applied the
// log's end as the broker gives it at the asking, within the read budget.
// A node that is not level keeps the seats it holds and claims no new
// ones (Replication: lag does not move a node's seats).
func (n *Node) Level(ctx context.Context) *engine.Refusal {
	if ref := n.OutOfService(); ref != nil {
		return ref
	}
	for _, d := range n.domains {
		if !d.spec.Estate || d.replica == nil {
			continue
		}
		ictx, cancel := context.WithTimeout(ctx, n.cfg.ReadBudget)
		info, err := d.replica.LogInfo(ictx)
		cancel()
		if err != nil {
			return engine.Refuse(engine.CodeBrokerUnreachable, "this node could not read the end of the %s log (%v), so it cannot tell whether it is level, and claims no new seat; start the turn on another node, or retry.", d.spec.Stream, err)
		}
		wctx, cancel := context.WithTimeout(ctx, n.cfg.ReadBudget)
		err = d.replica.WaitApplied(wctx, info.LastSeq)
		cancel()
		if err != nil {
			applied := d.replica.Applied()
			r := engine.Refuse(engine.CodeBehind, "this node has applied %s through %d and the log ends at %d: it keeps the seats it holds and claims no new ones until it is level; start this seat's turn on another node, or retry after the hint.",
				d.spec.Stream, applied, info.LastSeq)
			r.RetryAfter = statelog.RetryHint(info.LastSeq-min(info.LastSeq, applied), 0)
			p := d.replica.Position(info.LastSeq)
			r.Position = &p
			return r
		}
	}
	return nil
}

// seatsAnswer is the retention answer's seats part: every placement, and
// whether each data node in the register claims new seats. This node is
// judged as its claims are (Level, live); a peer from its figures in a,
// for the states that take a copy out of service, not for its lag: the
// register's positions trail the log by up to a beat, so a peer's lag
// there says nothing about whether it is level now (ask that node).
func (n *Node) seatsAnswer(ctx context.Context, a fleet.Answer) *turns.SeatsAnswer {
	if n.units == nil {
		return nil
	}
	estate := map[engine.Domain]bool{}
	for _, d := range n.domains {
		estate[d.spec.Name()] = d.spec.Estate
	}
	why := map[string]string{n.cfg.Name: ""}
	if r := n.Level(ctx); r != nil {
		why[n.cfg.Name] = string(r.Code) + ": " + r.Message
	}
	for _, nf := range a.Nodes {
		if nf.Node == n.cfg.Name {
			continue
		}
		var not []string
		for _, df := range nf.Domains {
			if estate[df.Domain] {
				if w := outOfService(df); w != "" {
					not = append(not, w)
				}
			}
		}
		why[nf.Node] = strings.Join(not, "; ")
	}
	s := n.units.Answer(ctx, why)
	return &s
}

// outOfService says why a node's figures in one domain show its copy out
// of service, "" when they do not.
func outOfService(df fleet.DomainFigures) string {
	switch {
	case df.WrongLog != "":
		return fmt.Sprintf("%s: wrong log (%s)", df.Domain, df.WrongLog)
	case df.ApplyErr != "":
		return fmt.Sprintf("%s: applier failing (%s)", df.Domain, df.ApplyErr)
	case df.LeftGen != 0:
		return fmt.Sprintf("%s: left gen %d", df.Domain, df.LeftGen)
	}
	return ""
}

// SeatFloors is the floor table as the seat surface reads it: SeatFloor
// for a log's floor, the table's own Raise and All.
type SeatFloors struct{ n *Node }

// SeatFloors is n's floor table for its seat surface.
func (n *Node) SeatFloors() SeatFloors { return SeatFloors{n: n} }

// Floor is n.SeatFloor.
func (f SeatFloors) Floor(stream string) *engine.Position { return f.n.SeatFloor(stream) }

// Raise raises the table's floor on p's log.
func (f SeatFloors) Raise(p engine.Position) { f.n.ryw.Raise(p) }

// All is every log's floor in the table.
func (f SeatFloors) All() []engine.Position { return f.n.ryw.All() }

// StartTurn starts a turn of seat in unit: the seat is kept where this
// node holds it, or claimed here only while this node is level (Level),
// the attempt recorded in the unit, and the trigger handed to this
// node's floors before the turn's first read. via names a node without
// data that runs the turn and sent the call here: the seat is placed on
// it (it has no copy to be behind; its reads go to sound data nodes),
// and its own floors take the trigger.
func (n *Node) StartTurn(ctx context.Context, seat, unit, via string, trigger *engine.Position) (turns.Opened, error) {
	if trigger != nil {
		if r := n.checkTrigger(ctx, *trigger); r != nil {
			return turns.Opened{}, r
		}
	}
	holder, level := n.cfg.Name, turns.Level(n.Level)
	if via != "" {
		holder, level = via, nil
	}
	p, claimed, err := n.units.Claim(ctx, seat, holder, level)
	if err != nil {
		if _, ok := engine.AsRefusal(err); ok {
			return turns.Opened{}, err
		}
		return turns.Opened{}, unitsUnread(err)
	}
	started, err := n.units.Start(ctx, unit, seat, holder, trigger)
	if err != nil {
		return turns.Opened{}, unitsUnread(err)
	}
	if trigger != nil && via == "" {
		n.ryw.Raise(*trigger)
	}
	return turns.Opened{Started: started, Placement: p, Claimed: claimed}, nil
}

// EndTurn ends unit's newest turn with outcome (once: again alike
// answers the same turn, otherwise refuses conflict).
func (n *Node) EndTurn(ctx context.Context, unit, outcome, summary string) (turns.Turn, error) {
	t, err := n.units.End(ctx, unit, outcome, summary)
	var ended *turns.EndedError
	switch {
	case err == nil:
		return t, nil
	case errors.Is(err, turns.ErrNoTurn):
		return t, engine.Refuse(engine.CodeNotFound, "unit %q has no turn started; call start_turn first, then end_turn when the turn's work is done.", unit)
	case errors.As(err, &ended):
		return t, engine.Refuse(engine.CodeConflict, "attempt %d of unit %q ended already as %s at %s; a turn ends once. Start another turn (start_turn) to run the unit again.",
			ended.Turn.Attempt, unit, ended.Turn.Outcome, ended.Turn.EndedAt.Format(time.RFC3339))
	}
	return t, unitsUnread(err)
}

func unitsUnread(err error) *engine.Refusal {
	return engine.Refuse(engine.CodeBrokerUnreachable, "the coordination store did not answer about the turn (%v); nothing was started or ended: retry the same call.", err)
}

// checkTrigger refuses a trigger position no change could have been
// committed at: on no log of this node, in another generation than its
// rows', or past the log's end. Handed to the floors, such a position
// would hold every seat read on the node behind for good.
func (n *Node) checkTrigger(ctx context.Context, p engine.Position) *engine.Refusal {
	for _, d := range n.domains {
		if d.spec.Stream != p.Stream || d.replica == nil {
			continue
		}
		if g := d.replica.Generation(); g != p.Generation {
			return engine.Refuse(engine.CodeWrongStream, "trigger_position %s is in generation %d, but this node's %s rows are in generation %d; a position from before a reanchor compares with nothing here.", p.Token(), p.Generation, p.Stream, g).With("key", "trigger_position")
		}
		ictx, cancel := context.WithTimeout(ctx, n.cfg.ReadBudget)
		info, err := d.replica.LogInfo(ictx)
		cancel()
		if err != nil {
			return engine.Refuse(engine.CodeBrokerUnreachable, "this node could not read the end of the %s log (%v) to check trigger_position %s against it; retry start_turn.", p.Stream, err, p.Token())
		}
		if p.Seq > info.LastSeq {
			return engine.Refuse(engine.CodeInvalidArgument, "trigger_position %s is past the end of the %s log (%d): no change was committed there. Send the position the wake carried.", p.Token(), p.Stream, info.LastSeq).With("key", "trigger_position")
		}
		return nil
	}
	return engine.Refuse(engine.CodeWrongStream, "trigger_position %s is on %s, which is no log this node keeps; send the position the wake carried, on the tracker's or the knowledge base's log.", p.Token(), p.Stream).With("key", "trigger_position")
}
