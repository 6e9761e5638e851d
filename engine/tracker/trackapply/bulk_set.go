package trackapply

// A bulk record that moves only status and assignee, applied as
// statements over its items' ids rather than row by row.

import (
	"strings"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// rowBulk, when set, makes every bulk record take the row-by-row apply
// (bulk): a test's seam (export_test.go) to hold the two applies' rows
// side by side, false in a node.
var rowBulk bool

// setChunk is the most ids one of bulkBySet's statements takes: a test's
// seam (export_test.go) cuts it to a few.
var setChunk = MaxRowsPerStatement

// bySet says whether a bulk record is applied by bulkBySet: one that
// moves status or assignee and adds no tag and no watcher. A tag's or a
// watcher's history row is numbered after the item's status and assignee
// rows and only where the set did not hold it already, which the row
// apply works out item by item.
func bySet(b *trackrec.BulkUpdate) bool {
	return !rowBulk && len(b.AddTags) == 0 && len(b.AddWatchers) == 0 && (b.Status != nil || b.Assignee != nil)
}

// bulkBySet applies a bulk record that moves status and assignee alone,
// writing what the row apply (bulk, then finish) writes: for every item of
// the record's project whose status or assignee it moves, a history row
// per field moved (status first, numbered 0, then the assignee, its
// hand-off count the one after the move), its reopens and hand-offs, and
// its row's scoped_through and updated_at. The ids go many to a statement,
// each chunk's history read from the rows before its UPDATE moves them, so
// an id given twice moves once, as in the row apply.
//
// The row apply first read every item into Go (a seek by id and the row,
// scanned) to decide the same thing per item: that read was a fifth of a
// maximal bulk's apply, and its history rows, bound eight values each, as
// much again. Here SQLite reads each row where it writes it.
func (a *apply) bulkBySet(b *trackrec.BulkUpdate) error {
	a.ownProject = b.Project
	st := bulkStatements(b)
	fixed := st.args(b, a.seq, a.ts)
	per := min(setChunk, BindLimit(a.ctx, a.tx)-len(fixed))
	var statusMoved, rows int64
	for start := 0; start < len(b.Items); {
		n := sqlite.ChunkLen(len(b.Items)-start, per)
		ids := b.Items[start : start+n]
		start += n
		for i, q := range st.history {
			got, err := a.execOver(q, fixed, ids)
			if err != nil {
				return err
			}
			if i == 0 && b.Status != nil {
				statusMoved += got
			}
			rows += got
			a.histWritten += int(got)
		}
		got, err := a.execOver(st.update, fixed, ids)
		if err != nil {
			return err
		}
		rows += got
	}
	// The row apply recounts the project when an item's status leaves or
	// takes in_progress; recounting after any status move writes the same,
	// as a recount that finds the count it holds writes nothing.
	if statusMoved > 0 {
		a.projects[b.Project] = true
	}
	a.at.Wrote(int(rows))
	return nil
}

// execOver runs q, whose text ends in an open IN list, over ids, and
// returns the rows it changed. q binds the fixed values it names first
// (as far as the highest it names: a plain ? takes the number after the
// highest named before it), the ids after them as plain placeholders.
// Numbered ids (?6, ?7, …) would have cost a lookup through every
// numbered name for each of them as the driver binds it: quadratic, a
// fifth of a maximal bulk.
func (a *apply) execOver(q string, fixed []any, ids []string) (int64, error) {
	named := 4
	if strings.Contains(q, pAssignee) {
		named = 5
	}
	args := append(make([]any, 0, named+len(ids)), fixed[:named]...)
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := a.at.Exec(a.ctx, a.tx, q+sqlite.Placeholders(len(ids))+`)`, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// setStatements are the statements of one shape of bulk record (status,
// assignee or both), each ending in an IN list of ids still open: the
// history inserts, in the order the row apply numbers them, and the row
// UPDATE.
type setStatements struct {
	history []string
	update  string
}

// The fixed values of the statements, named ?1…?5 (execOver binds them).
const (
	pSeq      = "?1"
	pTS       = "?2"
	pProject  = "?3"
	pStatus   = "?4"
	pAssignee = "?5"
)

// args are the values ?1…?5 name, in order.
func (setStatements) args(b *trackrec.BulkUpdate, seq uint64, ts int64) []any {
	status, assignee := "", ""
	if b.Status != nil {
		status = *b.Status
	}
	if b.Assignee != nil {
		assignee = *b.Assignee
	}
	return []any{seq, ts, b.Project, status, assignee}
}

// bulkStatements builds the statements of b's shape. The item's project is
// compared unindexed (+project), so each id is found by its own index
// rather than the project's items scanned. closed lists the closed
// statuses, a reopen being a move out of one of them into an open one.
func bulkStatements(b *trackrec.BulkUpdate) setStatements {
	const history = `INSERT OR FAIL INTO tracker_history(item, seq, n, field, old, new, handoffs, at) SELECT id, ` + pSeq + `, `
	const where = ` WHERE +project = ` + pProject + ` AND `
	var st setStatements
	var moved, sets []string
	statusMoves := "status != " + pStatus
	if b.Status != nil {
		st.history = append(st.history, history+`0, 'status', status, `+pStatus+`, handoffs, `+pTS+` FROM tracker_items`+where+statusMoves+` AND id IN (`)
		moved, sets = append(moved, statusMoves), append(sets, "status = "+pStatus)
		if !trackrec.Closed(*b.Status) {
			sets = append(sets, "reopens = reopens + (status IN ("+quoted(closedStatuses())+"))")
		}
	}
	if b.Assignee != nil {
		n := "0"
		if b.Status != nil {
			n = "(" + statusMoves + ")"
		}
		assigneeMoves := "assignee != " + pAssignee
		st.history = append(st.history, history+n+`, 'assignee', assignee, `+pAssignee+`, handoffs + 1, `+pTS+` FROM tracker_items`+where+assigneeMoves+` AND id IN (`)
		moved, sets = append(moved, assigneeMoves), append(sets, "assignee = "+pAssignee, "handoffs = handoffs + ("+assigneeMoves+")")
	}
	sets = append(sets, "scoped_through = "+pSeq, "updated_at = "+pTS)
	// SQLite evaluates every SET expression against the row as it was, so
	// the reopen and the hand-off read the old status and assignee.
	st.update = `UPDATE OR FAIL tracker_items SET ` + strings.Join(sets, ", ") + where + `(` + strings.Join(moved, " OR ") + `) AND id IN (`
	return st
}

// closedStatuses are the statuses trackrec.Closed holds closed.
func closedStatuses() []string {
	var out []string
	for _, s := range trackrec.Statuses {
		if trackrec.Closed(s) {
			out = append(out, s)
		}
	}
	return out
}

// quoted is vals as SQL string literals, comma-separated.
func quoted(vals []string) string {
	out := make([]string, len(vals))
	for i, v := range vals {
		out[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(out, ",")
}
