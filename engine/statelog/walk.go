package statelog

import (
	"context"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/ledger"
)

// Walk is a gesture: several records in order (a move, a merge, a
// dependency with its mirror, a subtree's trash or restore, a node gate on
// every log), each a step under an op id derived from the gesture's own
// and the object the step writes — never from its place in the walk,
// since a re-run reads its list afresh and a step named by position would
// carry another object's id. A step answered unknown ends the walk:
// nothing after it is written, and running the gesture again under its id
// answers each step that landed from the ledger and finishes the rest.
type Walk struct {
	// Op is the gesture's own operation.
	Op Op
	// PendingWait is how long a step answered pending is waited for, since
	// the next step decides against its rows; past it, or when 0, a
	// pending step ends the walk (what landed is durable, and running the
	// gesture again finishes the rest).
	PendingWait time.Duration
	// MaxSteps bounds the walk (0: no bound).
	MaxSteps int
	// Steps are the steps written so far, in order.
	Steps []WalkStep
	// Outcome is applied until a step is not; then that step's.
	Outcome engine.Outcome
	// Position is where the last step that landed landed.
	Position string
	// Stop is the step that ended the walk, nil while it goes on.
	Stop *WalkStep
}

// WalkStep is one step as the walk wrote it.
type WalkStep struct {
	Verb string
	// Object is what the step writes (an item's id, a domain): it names
	// the step's op id. Label is how an answer names it (a key).
	Object, Label string
	OpID          string
	// Outcome is the step's, "" for a step refused (see the walk's error).
	Outcome  engine.Outcome
	Position string
	Seq      uint64
	// Answer is the step's Written.Answer.
	Answer any
}

// Waiter waits for this node to apply a sequence (*Replica): a walk
// waits for a pending step's rows before the next step decides.
type Waiter interface {
	WaitApplied(ctx context.Context, seq uint64) error
}

// StepWrite writes one step's record under op.
type StepWrite func(ctx context.Context, op Op) (Written, error)

// NewWalk starts a gesture under op.
func NewWalk(op Op) *Walk { return &Walk{Op: op, Outcome: engine.Applied} }

// Step writes one step under the op id derived from the gesture's, the
// verb and the object; ok is false when the walk has ended (the step was
// refused, err says why, or it is unknown, or pending past the wait).
func (w *Walk) Step(ctx context.Context, r Waiter, verb, object, label string, write StepWrite) (bool, error) {
	if w.Stop != nil {
		return false, nil
	}
	if w.MaxSteps > 0 && len(w.Steps) >= w.MaxSteps {
		return false, engine.Refuse(engine.CodeInvalidArgument, "the gesture would take more than %d steps; split it.", w.MaxSteps)
	}
	sid, err := ledger.Step(w.Op.ID, verb, object)
	if err != nil {
		return false, err
	}
	// A step is vouched for exactly as its gesture is, under the same
	// argument digest. A client key past its mint window is judged at the
	// gesture's first step: one that landed there makes every later step
	// a retry of a gesture that began in time.
	op := Op{ID: sid, Digest: w.Op.Digest, Vouched: w.Op.Vouched, Late: w.Op.Late && len(w.Steps) == 0}
	return w.Record(ctx, r, op, verb, object, label, write)
}

// Record writes one step under op itself: the gesture's own id, for a
// first record that is the whole write where nothing follows it.
func (w *Walk) Record(ctx context.Context, r Waiter, op Op, verb, object, label string, write StepWrite) (bool, error) {
	wr, err := write(ctx, op)
	st := WalkStep{Verb: verb, Object: object, Label: label, OpID: op.ID.String(), Outcome: wr.Outcome, Position: wr.Position, Seq: wr.Seq, Answer: wr.Answer}
	if err != nil {
		st.Outcome = ""
		w.Steps = append(w.Steps, st)
		w.Stop = &w.Steps[len(w.Steps)-1]
		return false, err
	}
	w.Steps = append(w.Steps, st)
	switch wr.Outcome {
	case engine.Applied:
		w.Position = wr.Position
		return true, nil
	case engine.Pending:
		w.Position = wr.Position
		if w.PendingWait > 0 {
			wctx, cancel := context.WithTimeout(ctx, w.PendingWait)
			err := r.WaitApplied(wctx, wr.Seq)
			cancel()
			if err == nil {
				return true, nil
			}
			if ctx.Err() != nil {
				return false, ctx.Err()
			}
		}
	default:
		w.Position = ""
	}
	w.Outcome = wr.Outcome
	w.Stop = &w.Steps[len(w.Steps)-1]
	return false, nil
}
