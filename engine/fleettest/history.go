package fleettest

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/google/uuid"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/ledger"
)

// OpKind names what a history operation does to one work item.
type OpKind int

// The operations a history holds.
const (
	OpCreate OpKind = iota
	OpRead
	OpUpdate
)

// OpInput is an operation's call.
type OpInput struct {
	Key     string
	Kind    OpKind
	IfMatch uint64
}

// OpOutput is an operation's answer.
type OpOutput struct {
	// Version is what a read saw, or what a create or an update made.
	Version uint64
	// Stale: the update was refused stale.
	Stale bool
}

// ItemModel is one work item's version under reads and if_match updates,
// refusals included: a stale refusal is legal only where the version
// named is not the item's at that point. Versions are log positions, so
// an update's new version is only known from its answer (or, for an
// unknown one, from where it landed).
var ItemModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(OpInput).Key
			if _, ok := by[k]; !ok {
				keys = append(keys, k)
			}
			by[k] = append(by[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, by[k])
		}
		return out
	},
	Init: func() any { return uint64(0) },
	Step: func(state, input, output any) (bool, any) {
		v, in, out := state.(uint64), input.(OpInput), output.(OpOutput)
		switch in.Kind {
		case OpCreate:
			return v == 0, out.Version
		case OpRead:
			return v != 0 && out.Version == v, v
		default:
			if out.Stale {
				return v != in.IfMatch, v
			}
			return v == in.IfMatch && out.Version > v, out.Version
		}
	},
	DescribeOperation: func(input, output any) string {
		in, out := input.(OpInput), output.(OpOutput)
		switch in.Kind {
		case OpCreate:
			return fmt.Sprintf("create %s -> v%d", in.Key, out.Version)
		case OpRead:
			return fmt.Sprintf("read %s -> v%d", in.Key, out.Version)
		}
		if out.Stale {
			return fmt.Sprintf("update %s if_match v%d -> stale", in.Key, in.IfMatch)
		}
		return fmt.Sprintf("update %s if_match v%d -> v%d", in.Key, in.IfMatch, out.Version)
	},
	DescribeState: func(s any) string { return fmt.Sprintf("v%d", s.(uint64)) },
}

// HistOp is one operation as a client saw it.
type HistOp struct {
	Client    int
	Node      int
	In        OpInput
	Out       OpOutput
	Call, Ret int64
	// OpID is the key the client minted for a write, by which its record
	// is found on the log whatever it answered.
	OpID     string
	Outcome  string // applied, pending, unknown, stale, ok, refused:<code>, error
	Err      string // the error's text where Outcome is error
	Position string
	// Indefinite: the write's fate is known only from the log.
	Indefinite bool
	// DefiniteFail: refused with a code that promises nothing was written.
	DefiniteFail bool
}

// History is what every client saw, safe for concurrent adds.
type History struct {
	mu  sync.Mutex
	ops []HistOp
}

// Add records one operation.
func (h *History) Add(op HistOp) {
	h.mu.Lock()
	h.ops = append(h.ops, op)
	h.mu.Unlock()
}

// Ops is a copy of what was recorded.
func (h *History) Ops() []HistOp {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HistOp(nil), h.ops...)
}

// DefinitelyNotWritten are refusals that promise nothing was appended:
// stale is decided before any publish; no_quorum is the broker answering
// that it delivered the append to nobody; the rest are bad input. The
// check holds each promise against the quiesced log.
var DefinitelyNotWritten = map[engine.Code]bool{engine.CodeStale: true, engine.CodeNoQuorum: true, engine.CodeNotFound: true, engine.CodeInvalidArgument: true}

// Landed maps every client key on the log to the sequences its records
// landed at: the engine names a client's key's record <client form of
// the key>.<verb>-<object>.
func Landed(msgs []statelog.StoredMsg) map[string][]uint64 {
	landed := map[string][]uint64{}
	for _, m := range msgs {
		rec, err := record.Decode(m.Data)
		if err != nil || rec.OpID == "" || rec.Kind == record.KindBarrier {
			continue
		}
		u, _, _ := strings.Cut(rec.OpID, ".")
		if id, err := uuid.Parse(u); err == nil && ledger.IsClientForm(id) {
			u = ledger.KeyOf(id).String()
		}
		landed[u] = append(landed[u], m.Seq)
	}
	return landed
}

// Verdict is a history checked against the quiesced log and the model.
type Verdict struct {
	Ops, Reads, ReadsRefused, Acked, Applied, Pending, Stale int
	Lost, Twice, RefusedLanded, UnknownLanded, UnknownNever  int
	Outcomes                                                 map[string]int
	// ErrTexts counts the errors that came without a code.
	ErrTexts map[string]int
	// Problems names every broken promise: an acknowledged write not on
	// the log, one applied twice, a refused one that landed.
	Problems []string
	Result   porcupine.CheckResult
	Info     porcupine.LinearizationInfo
}

// Check resolves every write of h from landed (Landed of the quiesced
// log), counts what each promise came to, and checks the history with
// ItemModel. end is an instant after every operation returned: an unknown
// write that landed is open until then.
func Check(h *History, landed map[string][]uint64, end int64, timeout time.Duration) Verdict {
	v := Verdict{Outcomes: map[string]int{}, ErrTexts: map[string]int{}}
	for op, seqs := range landed {
		if len(seqs) > 1 {
			v.Twice++
			v.Problems = append(v.Problems, fmt.Sprintf("op %s landed %d times: %v", op, len(seqs), seqs))
		}
	}
	var ops []porcupine.Operation
	for _, o := range h.Ops() {
		v.Ops++
		v.Outcomes[o.Outcome]++
		if o.Err != "" {
			v.ErrTexts[o.Err]++
		}
		switch {
		case o.In.Kind == OpRead && o.Outcome == "ok":
			v.Reads++
		case o.In.Kind == OpRead:
			v.ReadsRefused++
			continue
		case o.In.Kind == OpCreate:
		case o.Outcome == "applied" || o.Outcome == "pending":
			v.Acked++
			if o.Outcome == "applied" {
				v.Applied++
			} else {
				v.Pending++
			}
			if len(landed[o.OpID]) == 0 {
				v.Lost++
				v.Problems = append(v.Problems, fmt.Sprintf("acknowledged write %s (%s at %s) is not on the log", o.OpID, o.Outcome, o.Position))
			}
		case o.Outcome == "stale":
			v.Stale++
			if len(landed[o.OpID]) > 0 {
				v.RefusedLanded++
				v.Problems = append(v.Problems, fmt.Sprintf("write %s refused stale but landed at %v", o.OpID, landed[o.OpID]))
			}
		case o.DefiniteFail:
			if len(landed[o.OpID]) > 0 {
				v.RefusedLanded++
				v.Problems = append(v.Problems, fmt.Sprintf("write %s refused %s but landed at %v", o.OpID, o.Outcome, landed[o.OpID]))
			}
			continue
		case o.Indefinite:
			seqs := landed[o.OpID]
			if len(seqs) == 0 {
				v.UnknownNever++
				continue // never happened: not in the history
			}
			v.UnknownLanded++
			o.Out = OpOutput{Version: seqs[0]}
			o.Ret = end + 1 // open: it may have taken effect at any time after its call
		}
		ops = append(ops, porcupine.Operation{ClientId: o.Client, Input: o.In, Output: o.Out, Call: o.Call, Return: o.Ret})
	}
	v.Result, v.Info = porcupine.CheckOperationsVerbose(ItemModel, ops, timeout)
	return v
}

// String is the verdict in one line.
func (v Verdict) String() string {
	var oc []string
	for k, n := range v.Outcomes {
		oc = append(oc, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(oc)
	return fmt.Sprintf("ops %d (%s); reads ok %d, refused %d; writes acknowledged %d (applied %d, pending %d), stale %d; lost %d; applied twice %d; refused but landed %d; unknown landed %d, never %d; porcupine %s",
		v.Ops, strings.Join(oc, " "), v.Reads, v.ReadsRefused, v.Acked, v.Applied, v.Pending, v.Stale, v.Lost, v.Twice, v.RefusedLanded, v.UnknownLanded, v.UnknownNever, v.Result)
}

// UpdateAnswer is what an if_match update answered, whichever surface
// carried it: an outcome with its position, a refusal's code (with the
// item's current version where it was refused stale), or an error that
// came without a code.
type UpdateAnswer struct {
	Outcome        string
	Position       string
	Refused        engine.Code
	CurrentVersion uint64
	Err            error
}

// Record fills the update o from its answer: what it came to in the
// history, and whether it is settled only from the log. It returns the
// item's version the answer taught the client (0 when it taught none).
func (o *HistOp) Record(a UpdateAnswer) (learnt uint64) {
	switch {
	case a.Err != nil:
		o.Outcome, o.Indefinite, o.Err = "error", true, a.Err.Error()
	case a.Refused == engine.CodeStale:
		o.Outcome, o.Out.Stale = "stale", true
		return a.CurrentVersion
	case a.Refused != "" && DefinitelyNotWritten[a.Refused]:
		o.Outcome, o.DefiniteFail = "refused:"+string(a.Refused), true
	case a.Refused != "":
		o.Outcome, o.Indefinite = "refused:"+string(a.Refused), true
	case a.Outcome == string(engine.Applied) || a.Outcome == string(engine.Pending):
		o.Outcome, o.Position = a.Outcome, a.Position
		p, err := engine.ParsePosition(a.Position)
		if err != nil {
			o.Outcome, o.Indefinite = "unparsed_position", true
			return 0
		}
		o.Out.Version = p.Seq
		return p.Seq
	default:
		o.Outcome, o.Indefinite = a.Outcome, true
	}
	return 0
}
