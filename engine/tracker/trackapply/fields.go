package trackapply

// The item fields a later build added (priority, due, estimate, type):
// the side table that holds them and the apply's changes of them. They
// live in a table of their own, keyed by item, so a node's existing
// database gains them by CREATE TABLE alone, and an item with every field
// at its default has no row there (the reads coalesce to the defaults).

import (
	"slices"
	"strconv"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// fieldsSchema is the side table of the item fields and the indexes the
// listing's sorts use.
const fieldsSchema = `
CREATE TABLE IF NOT EXISTS tracker_item_fields (
	id       TEXT PRIMARY KEY,
	priority INTEGER NOT NULL DEFAULT 0,
	due      TEXT NOT NULL DEFAULT '',
	estimate REAL NOT NULL DEFAULT 0,
	type     TEXT NOT NULL DEFAULT 'task'
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tracker_items_updated ON tracker_items(updated_at);
CREATE INDEX IF NOT EXISTS tracker_items_assignee ON tracker_items(assignee);
`

// FieldColumns read an item's fields, at their defaults where it has no
// row in the side table (FieldsJoin, as f).
const FieldColumns = `coalesce(f.priority, 0), coalesce(f.due, ''), coalesce(f.estimate, 0), coalesce(f.type, 'task')`

const FieldsJoin = ` LEFT JOIN tracker_item_fields f ON f.id = i.id`

func formatEstimate(e float64) string { return strconv.FormatFloat(e, 'g', -1, 64) }

// setItemFields changes the fields a record names (nil: left alone), each
// change a history row, and marks the side row to be written.
func (a *apply) setItemFields(it *itemRow, priority, due *string, estimate *float64, typ *string) {
	if priority != nil && slices.Contains(trackrec.Priorities, *priority) && trackrec.PriorityRank(*priority) != it.Priority {
		old := trackrec.PriorityName(it.Priority)
		it.Priority = trackrec.PriorityRank(*priority)
		a.change(it, "priority", old, *priority)
		it.fields = true
	}
	if due != nil && *due != it.Due {
		old := it.Due
		it.Due = *due
		a.change(it, "due", old, *due)
		it.fields = true
	}
	if estimate != nil && *estimate != it.Estimate {
		old := it.Estimate
		it.Estimate = *estimate
		a.change(it, "estimate", formatEstimate(old), formatEstimate(*estimate))
		it.fields = true
	}
	if typ != nil && *typ != "" && *typ != it.Type {
		old := it.Type
		it.Type = *typ
		a.change(it, "type", old, *typ)
		it.fields = true
	}
}

// createdFields sets a new item's fields from its create record.
func (a *apply) createdFields(it *itemRow, c *trackrec.CreateWorkItem) {
	it.Type = trackrec.TypeTask
	var p, d, t *string
	var e *float64
	if c.Priority != "" {
		p = &c.Priority
	}
	if c.Due != "" {
		d = &c.Due
	}
	if c.Estimate != 0 {
		e = &c.Estimate
	}
	if c.Type != "" {
		t = &c.Type
	}
	a.setItemFields(it, p, d, e, t)
}

// writeFields writes an item's side row where the record changed a field.
func (a *apply) writeFields(it *itemRow) (int, error) {
	if !it.fields {
		return 0, nil
	}
	_, err := a.at.Exec(a.ctx, a.tx, `INSERT INTO tracker_item_fields(id, priority, due, estimate, type) VALUES(?,?,?,?,?)
		ON CONFLICT(id) DO UPDATE SET priority = excluded.priority, due = excluded.due, estimate = excluded.estimate, type = excluded.type`,
		it.ID, it.Priority, it.Due, it.Estimate, it.Type)
	return 1, err
}
