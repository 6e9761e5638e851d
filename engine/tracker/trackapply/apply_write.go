package trackapply

// The write-out of the item rows a record changed. Most records change
// few items; a bulk update changes thousands and moves only their computed
// columns, version and updated_at (and maybe status or assignee). Writing
// every column of such a row made SQLite rewrite every index of
// tracker_items (key, doc, project/number, parent, status, updated_at,
// assignee) for each one, so a row whose other columns kept their values
// is written light: only the columns that can have moved, many rows to a
// statement.

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// itemShape is what an item row held when the apply read it, save the
// columns every light write sets anyway.
type itemShape struct {
	Key, Project                         string
	Number                               int64
	Title, Description, Status, Assignee string
	Parent                               string
	Trashed                              int64
	TrashRoot, Mark, MergedInto          string
}

// counts are the computed columns and version of an item row.
type counts struct {
	Reopens, Handoffs int64
	Version           uint64
}

func (it *itemRow) counts() counts { return counts{it.Reopens, it.Handoffs, it.Version} }

// markRead notes the row as read: what base and baseCounts hold.
func (it *itemRow) markRead() { it.read, it.base, it.baseCounts = true, it.shape(), it.counts() }

func (it *itemRow) shape() itemShape {
	return itemShape{it.Key, it.Project, it.Number, it.Title, it.Description, it.Status, it.Assignee, it.Parent,
		it.Trashed, it.TrashRoot, it.Mark, it.MergedInto}
}

// Light writes by which of status and assignee moved.
const (
	lightStatus = 1 << iota
	lightAssignee
)

// lightMask says whether an item read from its row can be written light,
// and which of status and assignee it then writes.
func (it *itemRow) lightMask() (int, bool) {
	if it.created || !it.read {
		return 0, false
	}
	now := it.shape()
	mask := 0
	if now.Status != it.base.Status {
		mask |= lightStatus
		now.Status = it.base.Status
	}
	if now.Assignee != it.base.Assignee {
		mask |= lightAssignee
		now.Assignee = it.base.Assignee
	}
	return mask, now == it.base
}

// lightWrites buffers the light row writes of one record, one multi-row
// UPDATE per mask, and the uniform ones.
type lightWrites struct {
	by [4]*rowBuffer
	// uniform are the items whose counts and version kept their values,
	// so that only scoped_through and updated_at moved, to the record's
	// own seq and ts, and maybe status, grouped by the status they take
	// (items a record changes that are not its own; the row-by-row bulk
	// apply, now bulkBySet's reference in bulk_row_test.go, wrote most of
	// its items so). Each group is written by one UPDATE over a list of
	// docs, its values bound once, rather than joined row by row against
	// a table of six or seven values each (the join and its values were
	// most of a bulk's row writes); a row written either way is the same
	// row. An assignee that moves always moves handoffs too, so such a
	// row goes by the join.
	uniform []*uniformGroup
	groups  map[string]*uniformGroup
	seq     uint64
	ts      int64
}

// uniformGroup is the rows that take one status (all of them keep their
// own where status is ""), by doc: the table's rowid, so each row is found
// by one seek rather than two (its id's index, then the row).
type uniformGroup struct {
	status string
	docs   []any
}

func (l *lightWrites) add(it *itemRow, mask int, seq uint64, ts int64) {
	if it.Doc != 0 && mask&lightAssignee == 0 && it.counts() == it.baseCounts && it.Scoped == seq && it.Updated == ts {
		status := ""
		if mask&lightStatus != 0 {
			status = it.Status
		}
		g := l.groups[status]
		if g == nil {
			if l.groups == nil {
				l.groups = map[string]*uniformGroup{}
			}
			g = &uniformGroup{status: status}
			l.groups[status] = g
			l.uniform = append(l.uniform, g)
		}
		g.docs = append(g.docs, it.Doc)
		l.seq, l.ts = seq, ts
		return
	}
	if l.by[mask] == nil {
		cols := []string{"id", "reopens", "handoffs", "version", "scoped_through", "updated_at"}
		if mask&lightStatus != 0 {
			cols = append(cols, "status")
		}
		if mask&lightAssignee != 0 {
			cols = append(cols, "assignee")
		}
		sets := make([]string, 0, len(cols)-1)
		for _, c := range cols[1:] {
			sets = append(sets, c+" = v."+c)
		}
		l.by[mask] = &rowBuffer{head: "WITH v(" + strings.Join(cols, ",") + ") AS (VALUES ",
			tail: ") UPDATE OR FAIL tracker_items SET " + strings.Join(sets, ", ") + " FROM v WHERE tracker_items.id = v.id", cols: len(cols)}
	}
	vals := []any{it.ID, it.Reopens, it.Handoffs, it.Version, it.Scoped, it.Updated}
	if mask&lightStatus != 0 {
		vals = append(vals, it.Status)
	}
	if mask&lightAssignee != 0 {
		vals = append(vals, it.Assignee)
	}
	l.by[mask].add(vals...)
}

// flush writes the buffered light rows.
func (l *lightWrites) flush(ctx context.Context, tx *sql.Tx, prepared func(context.Context, *sql.Tx, string, ...any) (sql.Result, error)) error {
	for _, b := range l.by {
		if b == nil {
			continue
		}
		if _, err := b.flush(ctx, tx, prepared); err != nil {
			return err
		}
	}
	for _, g := range l.uniform {
		if err := g.flush(ctx, tx, prepared, l.seq, l.ts); err != nil {
			return err
		}
	}
	l.uniform, l.groups = nil, nil
	return nil
}

// flush writes a uniform group, in the chunks sqlite.ChunkLen gives, so
// the texts are few and prepared once.
func (g *uniformGroup) flush(ctx context.Context, tx *sql.Tx, prepared func(context.Context, *sql.Tx, string, ...any) (sql.Result, error), seq uint64, ts int64) error {
	set, vals := "scoped_through = ?, updated_at = ?", []any{seq, ts}
	if g.status != "" {
		set, vals = set+", status = ?", append(vals, g.status)
	}
	per := min(MaxRowsPerStatement, BindLimit(ctx, tx)-len(vals))
	for start := 0; start < len(g.docs); {
		n := sqlite.ChunkLen(len(g.docs)-start, per)
		args := append(append(make([]any, 0, len(vals)+n), vals...), g.docs[start:start+n]...)
		res, err := prepared(ctx, tx, `UPDATE OR FAIL tracker_items SET `+set+` WHERE doc IN (`+sqlite.Placeholders(n)+`)`, args...)
		if err != nil {
			return err
		}
		// Every row was read in this transaction: one not found would be
		// a row this node never writes, so the apply fails (and retries)
		// rather than leave it.
		if got, err := res.RowsAffected(); err != nil || got != int64(n) {
			return fmt.Errorf("trackapply: a light write of %d items found %d of their rows (%v)", n, got, err)
		}
		if traceStatement != nil {
			traceStatement("UPDATE OR FAIL tracker_items SET "+set, n)
		}
		start += n
	}
	return nil
}

// itemWriter holds what the write-out of one record's item rows shares:
// its whole-row UPDATEs, prepared once each (preparing is most of an
// exec's cost), and the light writes.
type itemWriter struct {
	upd   [1 << len(indexedGroups)]*sql.Stmt
	light lightWrites
}

func (w *itemWriter) close() {
	for _, st := range w.upd {
		if st != nil {
			st.Close()
		}
	}
}

// indexedGroups are the columns of tracker_items that indexes cover, in
// groups that move together. SQLite rewrites every index holding a column
// an UPDATE sets, whether its value changed or not, so a row write names
// only the groups that moved: a title edit that set every column rewrote
// six index entries it did not change, four of the fifteen pages its
// apply wrote to the WAL.
var indexedGroups = [...]struct {
	cols   []string
	values func(*itemShape) []any
}{
	{[]string{"key"}, func(s *itemShape) []any { return []any{s.Key} }},
	{[]string{"project", "number"}, func(s *itemShape) []any { return []any{s.Project, s.Number} }},
	{[]string{"status"}, func(s *itemShape) []any { return []any{s.Status} }},
	{[]string{"assignee"}, func(s *itemShape) []any { return []any{s.Assignee} }},
	{[]string{"parent"}, func(s *itemShape) []any { return []any{s.Parent} }},
}

// itemColumnsSet are the columns of tracker_items no index covers but
// updated_at, which a row write always sets.
const itemColumnsSet = `title = ?, description = ?, reopens = ?, handoffs = ?, trashed = ?, trash_root = ?, mark = ?, merged_into = ?, version = ?, scoped_through = ?, updated_at = ?`

// movedGroups is the mask of indexedGroups a row write sets, with their
// values: the groups whose columns moved since the row was read, or all of
// them for a row not read.
func (it *itemRow) movedGroups() (int, []any) {
	mask, vals := 0, []any(nil)
	now := it.shape()
	for i, g := range indexedGroups {
		if v := g.values(&now); !it.read || !slices.Equal(v, g.values(&it.base)) {
			mask |= 1 << i
			vals = append(vals, v...)
		}
	}
	return mask, vals
}

// writeItem writes one changed item's row: inserted when the record
// created it, buffered light where only what a light write sets moved,
// else every column but those of the index groups that kept their values.
func (a *apply) writeItem(w *itemWriter, it *itemRow) error {
	if it.created {
		_, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_items(`+itemRowColumns+`) VALUES(`+sqlite.Placeholders(20)+`)`,
			it.ID, it.Key, it.Project, it.Number, it.Title, it.Description, it.Status, it.Assignee, it.Parent, it.Reopens, it.Handoffs,
			it.Trashed, it.TrashRoot, it.Mark, it.MergedInto, it.Doc, it.Version, it.Scoped, it.Created, it.Updated)
		if err == nil {
			a.held.keys.add(it.Key, it.ID) // only a create files an item
		}
		return err
	}
	if mask, ok := it.lightMask(); ok {
		w.light.add(it, mask, a.seq, a.ts)
		return nil
	}
	if it.partial {
		return fmt.Errorf("tracker: item %s was read in part and changed beyond what a light write sets", it.ID)
	}
	mask, moved := it.movedGroups()
	args := append([]any{it.Title, it.Description, it.Reopens, it.Handoffs, it.Trashed, it.TrashRoot, it.Mark, it.MergedInto, it.Version, it.Scoped, it.Updated}, moved...)
	args = append(args, it.ID)
	if w.upd[mask] == nil {
		sets := itemColumnsSet
		for i, g := range indexedGroups {
			if mask&(1<<i) != 0 {
				for _, c := range g.cols {
					sets += ", " + c + " = ?"
				}
			}
		}
		var err error
		if w.upd[mask], err = a.at.Prepare(a.ctx, a.tx, `UPDATE tracker_items SET `+sets+` WHERE id = ?`); err != nil {
			return err
		}
	}
	_, err := w.upd[mask].ExecContext(a.ctx, args...)
	return err
}
