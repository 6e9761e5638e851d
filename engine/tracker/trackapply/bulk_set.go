package trackapply

// A bulk record applied as statements over its items' ids rather than
// row by row.

import (
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// bulkApply applies a bulk record: bulkBySet in a node. A test swaps in
// the row-by-row apply (bulk_row_test.go, through RowBulk) to hold the
// two applies' rows side by side.
var bulkApply = (*apply).bulkBySet

// setChunk is the most ids one of bulkBySet's statements takes: a test's
// seam (export_test.go) cuts it to a few.
var setChunk = MaxRowsPerStatement

// bulkBySet applies a bulk record, writing what the row apply (bulkByRow,
// then finish) writes: for every item of the record's project, a history row
// per change in the order the row apply numbers them (status, assignee,
// then each tag and each watcher the item did not hold, in the order
// given), its reopens and hand-offs, the set rows, and the row's
// scoped_through and updated_at where anything changed. The ids go many
// to a statement; each statement of a chunk reads the rows as the ones
// before it left them, so an id given twice changes once, as in the row
// apply.
//
// The row apply first read every item into Go (a seek by id and the row,
// scanned) to decide the same thing per item: that read was a fifth of a
// maximal bulk's apply, and its history rows, bound eight values each, as
// much again. Here SQLite reads each row where it writes it.
func (a *apply) bulkBySet(b *trackrec.BulkUpdate) error {
	a.ownProject = b.Project
	steps := bulkSteps(b)
	status, assignee := "", ""
	if b.Status != nil {
		status = *b.Status
	}
	if b.Assignee != nil {
		assignee = *b.Assignee
	}
	fixed := []any{a.seq, a.ts, b.Project, status, assignee, ""}
	per := min(setChunk, BindLimit(a.ctx, a.tx)-len(fixed))
	var statusMoved, rows int64
	for start := 0; start < len(b.Items); {
		n := sqlite.ChunkLen(len(b.Items)-start, per)
		docs, err := a.docsOf(b.Items[start : start+n])
		start += n
		if err != nil {
			return err
		}
		if len(docs) == 0 {
			continue
		}
		for _, st := range steps {
			fixed[5] = st.value
			got, err := a.execOver(st, fixed, docs)
			if err != nil {
				return err
			}
			rows += got
			if st.history {
				a.histWritten += int(got)
			}
			if st.status {
				statusMoved += got
			}
		}
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

// docsOf are the docs of the items ids names that the file holds, each
// once: the steps find their rows by doc, tracker_items' rowid, so each
// id is sought in its index once a chunk rather than once a statement.
func (a *apply) docsOf(ids []string) ([]any, error) {
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	docs, err := sqlite.Column[int64](a.at.Query(a.ctx, a.tx, `SELECT doc FROM tracker_items WHERE id IN (`+sqlite.Placeholders(len(ids))+`)`, args...))
	out := make([]any, len(docs))
	for i, d := range docs {
		out[i] = d
	}
	return out, err
}

// execOver runs st over docs and returns the rows it changed. Its text
// binds the fixed values it names first (as far as the highest it names:
// a plain ? takes the number after the highest named before it), the ids
// after them as plain placeholders. Numbered ids (?7, ?8, …) would have
// cost a lookup through every numbered name for each of them as the
// driver binds it: quadratic, a fifth of a maximal bulk.
func (a *apply) execOver(st setStep, fixed []any, docs []any) (int64, error) {
	named := len(fixed)
	for named > 0 && !strings.Contains(st.q, "?"+strconv.Itoa(named)) {
		named--
	}
	args := append(append(make([]any, 0, named+len(docs)), fixed[:named]...), docs...)
	res, err := a.at.Exec(a.ctx, a.tx, st.q+sqlite.Placeholders(len(docs))+`)`+st.tail, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err == nil && traceStatement != nil {
		head, _, _ := strings.Cut(st.q, " SELECT ")
		head, _, _ = strings.Cut(head, " WHERE ")
		traceStatement(head, int(n))
	}
	return n, err
}

// setStep is one statement of a bulk record's apply by set, run over each
// chunk of its ids: its text ends in an IN list left open for them.
type setStep struct {
	q, tail string // the text before the ids, and after their list
	value   string // what ?6 names: the tag or watcher a set's steps add
	history bool   // the rows it writes are history rows
	status  bool   // the rows it writes are the status's history rows
}

// The fixed values of the statements, named ?1…?6 (execOver binds them).
const (
	pSeq      = "?1"
	pTS       = "?2"
	pProject  = "?3"
	pStatus   = "?4"
	pAssignee = "?5"
	pValue    = "?6"
)

const (
	historyInsert = `INSERT OR FAIL INTO tracker_history(item, seq, n, field, old, new, handoffs, at, doc) SELECT id, ` + pSeq + `, `
	// ofProject leads every WHERE: the item's project is compared
	// unindexed (+project), so each row is found by its doc (the rowid,
	// docsOf) rather than the project's items scanned.
	ofProject = ` FROM tracker_items WHERE +project = ` + pProject + ` AND `
	// earlierHistory numbers a history row after those the record wrote
	// on the item before it.
	earlierHistory = `(SELECT count(*) FROM tracker_history h WHERE h.doc = tracker_items.doc AND h.seq = ` + pSeq + `)`
	// historyTail ends a history row's values with the item's doc and
	// opens the WHERE.
	historyTail = pTS + `, doc` + ofProject
)

// bulkSteps are the statements of b, in order: the status's and the
// assignee's history rows, then the row UPDATE that moves them (SQLite
// evaluates every SET expression against the row as it was, so the reopen
// and the hand-off read the old status and assignee); then for each tag
// and each watcher, its history rows where the item does not hold it and
// its set rows; last, scoped_through and updated_at on the rows only those
// changed.
func bulkSteps(b *trackrec.BulkUpdate) []setStep {
	var steps []setStep
	var moved, sets []string
	statusMoves := "status != " + pStatus
	if b.Status != nil {
		steps = append(steps, setStep{q: historyInsert + `0, 'status', status, ` + pStatus + `, handoffs, ` + historyTail + statusMoves + ` AND doc IN (`,
			history: true, status: true})
		moved, sets = append(moved, statusMoves), append(sets, "status = "+pStatus)
		if !trackrec.Closed(*b.Status) {
			sets = append(sets, "reopens = reopens + (status IN ("+closedSQL+"))")
		}
	}
	if b.Assignee != nil {
		assigneeMoves := "assignee != " + pAssignee
		steps = append(steps, setStep{q: historyInsert + earlierHistory + `, 'assignee', assignee, ` + pAssignee + `, handoffs + 1, ` + historyTail + assigneeMoves + ` AND doc IN (`,
			history: true})
		moved, sets = append(moved, assigneeMoves), append(sets, "assignee = "+pAssignee, "handoffs = handoffs + ("+assigneeMoves+")")
	}
	if len(moved) > 0 {
		sets = append(sets, "scoped_through = "+pSeq, "updated_at = "+pTS)
		steps = append(steps, setStep{q: `UPDATE OR FAIL tracker_items SET ` + strings.Join(sets, ", ") + strings.TrimPrefix(ofProject, " FROM tracker_items") +
			`(` + strings.Join(moved, " OR ") + `) AND doc IN (`})
	}
	added := false
	for _, set := range []struct {
		field, table, col string
		vals              []string
	}{{"tag", "tracker_tags", "tag", b.AddTags}, {"watcher", "tracker_watchers", "watcher", b.AddWatchers}} {
		for _, v := range trackrec.Distinct(set.vals) {
			steps = append(steps,
				setStep{q: historyInsert + earlierHistory + `, '` + set.field + `', '', ` + pValue + `, handoffs, ` + historyTail +
					`NOT EXISTS (SELECT 1 FROM ` + set.table + ` s WHERE s.item = tracker_items.id AND s.` + set.col + ` = ` + pValue + `) AND doc IN (`,
					value: v, history: true},
				setStep{q: `INSERT OR FAIL INTO ` + set.table + `(item, ` + set.col + `) SELECT id, ` + pValue + ofProject + `doc IN (`,
					tail: ` ON CONFLICT DO NOTHING`, value: v})
			added = true
		}
	}
	if added {
		steps = append(steps, setStep{q: `UPDATE OR FAIL tracker_items SET scoped_through = ` + pSeq + `, updated_at = ` + pTS +
			strings.TrimPrefix(ofProject, " FROM tracker_items") + `scoped_through != ` + pSeq +
			` AND EXISTS (SELECT 1 FROM tracker_history h WHERE h.doc = tracker_items.doc AND h.seq = ` + pSeq + `) AND doc IN (`})
	}
	return steps
}
