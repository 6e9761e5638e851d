package statelog_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/statelog/statelogtest"
)

// written renders a write's answer: the outcome and where it landed, or
// the refusal's code.
func written(w statelog.Written, err error) string {
	if err != nil {
		if ref, ok := engine.AsRefusal(err); ok {
			s := "refused " + string(ref.Code)
			if ref.Position != nil {
				s += fmt.Sprintf(" at %d", ref.Position.Seq)
			}
			if w, ok := ref.Fields["writer"]; ok {
				s += fmt.Sprintf(" (writer %v)", w)
			}
			return s
		}
		return "error: " + err.Error()
	}
	s := string(w.Outcome)
	if w.Outcome != engine.Unknown {
		s += fmt.Sprintf(" at %d", w.Seq)
	}
	if w.Replayed {
		s += " (replayed)"
	}
	if w.Unvouched {
		s += " (unvouched)"
	}
	return s
}

func (h *harness) show(what string, st kvState, say func(string, ...any)) {
	switch what {
	case "checkpoint":
		say("seq=%d applied_through=%d", st.seq, st.appliedThrough)
	case "rows":
		keys := sortedKeys(st.model.rows)
		for _, k := range keys {
			r := st.model.rows[k]
			say("%s=%s version=%d", k, r.Value, r.Version)
		}
		if len(keys) == 0 {
			say("none")
		}
	case "ledger":
		type line struct {
			op  string
			seq uint64
		}
		var ls []line
		for op, seq := range st.model.ledger {
			ls = append(ls, line{h.opName(op), seq})
		}
		sort.Slice(ls, func(i, j int) bool { return ls[i].seq < ls[j].seq })
		for _, l := range ls {
			say("%s at %d", l.op, l.seq)
		}
		if len(ls) == 0 {
			say("none")
		}
	case "anchors":
		for _, s := range sortedKeys(st.model.anchors) {
			say("%s at %d", shortSubject(s), st.model.anchors[s])
		}
	}
}

func (h *harness) attemptLine(a statelogtest.Attempt) string {
	s := fmt.Sprintf("#%d %s %s %s", a.N, a.Node, shortSubject(a.Subject), h.opName(a.MsgID))
	if a.Expect != nil {
		s += fmt.Sprintf(" expect=%d", *a.Expect)
	}
	switch a.Outcome {
	case "ok":
		s += fmt.Sprintf(": ok at %d", a.Seq)
	case "duplicate":
		s += fmt.Sprintf(": duplicate of %d", a.Seq)
	case "wrong_last":
		s += fmt.Sprintf(": wrong last (%d)", a.Last)
	default:
		s += ": " + a.Outcome
	}
	if a.AckLost {
		s += ", ack lost"
	}
	return s
}

func flags(r statelogtest.ReaderState) string {
	var f []string
	if r.Held {
		f = append(f, "held")
	}
	if r.AcksLost {
		f = append(f, "acks lost")
	}
	if !r.Open {
		f = append(f, "closed")
	}
	if len(f) == 0 {
		return ""
	}
	return " (" + strings.Join(f, ", ") + ")"
}

func shortSubject(s string) string {
	return strings.TrimPrefix(s, statelog.SubjectPrefix(kvName))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// recorder keeps a node's log lines: the write path's and the applier's
// events, printed by the logs command.
type recorder struct {
	mu    sync.Mutex
	lines []string
	seen  int
	n     map[string]int
}

func (r *recorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	line := rec.Message
	rec.Attrs(func(a slog.Attr) bool {
		switch a.Key {
		case "drift", engine.LogGate:
			line += " " + a.Key + "=" + a.Value.String()
		}
		return true
	})
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, line)
	if r.n == nil {
		r.n = map[string]int{}
	}
	r.n[rec.Message]++
	return nil
}

func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// take returns the lines since the last take.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := slices.Clone(r.lines[r.seen:])
	r.seen = len(r.lines)
	return out
}

func (r *recorder) count(msg string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[msg]
}
