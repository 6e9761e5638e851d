package tracker

// Named status transitions (update_work_item's transition) and the
// refusal of a dependency that would close a cycle. Both are decided
// against the item's local rows inside the update's decide, so a round
// lost to a concurrent change decides them again.

import (
	"context"
	"database/sql"
	"slices"
	"strings"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Transition is a named status change: from any of From, to To.
type Transition struct {
	Name string
	From []string
	To   string
}

// Transitions are the named status changes, in the order a tool
// description lists them.
var Transitions = []Transition{
	{"start", []string{StatusOpen}, StatusInProgress},
	{"block", []string{StatusOpen, StatusInProgress}, StatusBlocked},
	{"unblock", []string{StatusBlocked}, StatusInProgress},
	{"finish", []string{StatusOpen, StatusInProgress}, StatusDone},
	{"cancel", []string{StatusOpen, StatusInProgress, StatusBlocked}, StatusCancelled},
	{"reopen", []string{StatusDone, StatusCancelled}, StatusOpen},
}

// TransitionNames lists the transitions' names.
func TransitionNames() []string {
	out := make([]string, len(Transitions))
	for i, t := range Transitions {
		out[i] = t.Name
	}
	return out
}

// TransitionRules is the allowed set in a sentence, for a tool's
// description: "start: open→in_progress; ...".
func TransitionRules() string {
	parts := make([]string, len(Transitions))
	for i, t := range Transitions {
		parts[i] = t.Name + ": " + strings.Join(t.From, "|") + "→" + t.To
	}
	return strings.Join(parts, "; ")
}

// allowedFrom names the transitions allowed from a status.
func allowedFrom(status string) []string {
	var out []string
	for _, t := range Transitions {
		if slices.Contains(t.From, status) {
			out = append(out, t.Name)
		}
	}
	return out
}

// checkTransition refuses an unknown transition name, and one given with
// status (they would say the same thing twice, perhaps differently).
func checkTransition(p ItemPatch) error {
	if p.Transition == "" {
		return nil
	}
	if !slices.ContainsFunc(Transitions, func(t Transition) bool { return t.Name == p.Transition }) {
		return invalid("transition %q is not one of %s.", p.Transition, strings.Join(TransitionNames(), ", "))
	}
	if p.Status != nil {
		return invalid("give status or transition, not both.")
	}
	return nil
}

// decideTransition is the status an update writes: the patch's status, or
// its transition's target where the item's current status allows it.
func decideTransition(key, current string, p ItemPatch) (*string, error) {
	if p.Transition == "" {
		return p.Status, nil
	}
	i := slices.IndexFunc(Transitions, func(t Transition) bool { return t.Name == p.Transition })
	t := Transitions[i]
	if !slices.Contains(t.From, current) {
		allowed := allowedFrom(current)
		if len(allowed) == 0 {
			return nil, invalid("%s is %s; transition %s is not allowed from %s, and no transition is.", key, current, t.Name, current)
		}
		return nil, invalid("%s is %s; transition %s is not allowed from %s. Allowed from %s: %s.", key, current, t.Name, current, current, strings.Join(allowed, ", "))
	}
	to := t.To
	return &to, nil
}

// maxCycleWalk bounds how many items a cycle check visits.
const maxCycleWalk = 10000

// checkNoDependencyCycle refuses depends_on edges from id that would
// close a cycle: where id is reachable from an added dependency through
// authored depends_on edges, the refusal names the whole cycle.
func checkNoDependencyCycle(ctx context.Context, tx *sql.Tx, id string, adds []trackrec.EdgeRef) error {
	for _, e := range adds {
		if e.Kind != EdgeDependsOn {
			continue
		}
		path, err := dependencyPath(ctx, tx, e.Other, id)
		if err != nil || path == nil {
			return err
		}
		keys := make([]string, 0, len(path)+1)
		for _, pid := range append([]string{id}, path...) {
			var k string
			if err := tx.QueryRowContext(ctx, `SELECT key FROM tracker_items WHERE id = ?`, pid).Scan(&k); err != nil {
				return err
			}
			keys = append(keys, k)
		}
		var b strings.Builder
		b.WriteString(keys[0] + " depends on " + keys[1])
		for _, k := range keys[2:] {
			b.WriteString(", which depends on " + k)
		}
		return invalid("%s: that would be a dependency cycle. Leave that dependency out, or first remove one in the cycle (remove_dependencies).", b.String())
	}
	return nil
}

// dependencyPath is the shortest chain of depends_on edges from one item
// to another (from first, to last), nil where there is none.
func dependencyPath(ctx context.Context, tx *sql.Tx, from, to string) ([]string, error) {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 && len(prev) < maxCycleWalk {
		cur := queue[0]
		queue = queue[1:]
		if cur == to {
			var path []string
			for n := cur; n != ""; n = prev[n] {
				path = append(path, n)
			}
			slices.Reverse(path)
			return path, nil
		}
		next, err := sqlite.Strings(ctx, tx, `SELECT other FROM tracker_edges WHERE item = ? AND kind = ? AND authored = 1 ORDER BY other`, cur, EdgeDependsOn)
		if err != nil {
			return nil, err
		}
		for _, n := range next {
			if _, seen := prev[n]; !seen {
				prev[n] = cur
				queue = append(queue, n)
			}
		}
	}
	return nil, nil
}
