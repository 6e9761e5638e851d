package tracker

// The item fields a later build added (priority, due, estimate, type):
// their values, checks, the side table that holds them and the apply's
// changes of them. They live in a table of their own, keyed by item, so
// a node's existing database gains them by CREATE TABLE alone, and an
// item with every field at its default has no row there (the reads
// coalesce to the defaults). A record carrying one of them is stamped
// FieldsFormat, so an older build retains it rather than drop the field.

import (
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Priorities, least to most urgent; the default is none.
const (
	PriorityNone   = "none"
	PriorityLow    = "low"
	PriorityMedium = "medium"
	PriorityHigh   = "high"
	PriorityUrgent = "urgent"
)

// Priorities lists every priority, least urgent first: a priority's rank
// is its place here.
var Priorities = []string{PriorityNone, PriorityLow, PriorityMedium, PriorityHigh, PriorityUrgent}

// Item types; the default is task.
const (
	TypeTask    = "task"
	TypeBug     = "bug"
	TypeFeature = "feature"
	TypeEpic    = "epic"
	TypeChore   = "chore"
)

// ItemTypes lists every item type.
var ItemTypes = []string{TypeTask, TypeBug, TypeFeature, TypeEpic, TypeChore}

// DueLayout is a due date's form, YYYY-MM-DD.
const DueLayout = "2006-01-02"

// MaxEstimate bounds an estimate (in whatever unit the team counts).
const MaxEstimate = 1e6

// FieldsFormat is the record format version that added the item fields.
const FieldsFormat = 2

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

// fieldColumns read an item's fields, at their defaults where it has no
// row in the side table (joined as f).
const fieldColumns = `coalesce(f.priority, 0), coalesce(f.due, ''), coalesce(f.estimate, 0), coalesce(f.type, 'task')`

const fieldsJoin = ` LEFT JOIN tracker_item_fields f ON f.id = i.id`

func priorityRank(p string) int64 { return int64(max(0, slices.Index(Priorities, p))) }

func priorityName(rank int64) string {
	if rank < 0 || rank >= int64(len(Priorities)) {
		return PriorityNone
	}
	return Priorities[rank]
}

func checkPriority(p string) error {
	if !slices.Contains(Priorities, p) {
		return invalid("priority %q is not one of %s.", p, strings.Join(Priorities, ", "))
	}
	return nil
}

func checkType(t string) error {
	if !slices.Contains(ItemTypes, t) {
		return invalid("type %q is not one of %s.", t, strings.Join(ItemTypes, ", "))
	}
	return nil
}

// checkDue accepts a calendar date YYYY-MM-DD, or "" (no due date).
func checkDue(d string) error {
	if d == "" {
		return nil
	}
	if _, err := time.Parse(DueLayout, d); err != nil {
		return invalid("due %q is not a date YYYY-MM-DD (e.g. 2026-03-31); give \"\" to clear it.", d)
	}
	return nil
}

func checkEstimate(e float64) error {
	if math.IsNaN(e) || e < 0 || e > MaxEstimate {
		return invalid("estimate %v is out of range; give a number from 0 (none) to %g.", e, float64(MaxEstimate))
	}
	return nil
}

// checkFields checks a create's fields and fills their defaults.
func checkFields(in *NewWorkItem) error {
	if in.Priority == "" {
		in.Priority = PriorityNone
	}
	if in.Type == "" {
		in.Type = TypeTask
	}
	for _, err := range []error{checkPriority(in.Priority), checkType(in.Type), checkDue(in.Due), checkEstimate(in.Estimate)} {
		if err != nil {
			return err
		}
	}
	return nil
}

// checkPatchFields checks an update's fields.
func checkPatchFields(p ItemPatch) error {
	if p.Priority != nil {
		if err := checkPriority(*p.Priority); err != nil {
			return err
		}
	}
	if p.Type != nil {
		if err := checkType(*p.Type); err != nil {
			return err
		}
	}
	if p.Due != nil {
		if err := checkDue(*p.Due); err != nil {
			return err
		}
	}
	if p.Estimate != nil {
		return checkEstimate(*p.Estimate)
	}
	return nil
}

// patchHasFields says whether a patch changes one of the item fields.
func patchHasFields(p ItemPatch) bool {
	return p.Priority != nil || p.Due != nil || p.Estimate != nil || p.Type != nil
}

// createFields are a create's item fields as its record carries them:
// defaults are left out, so a create that sets none is a version-1 record.
func createFields(c *createWorkItem, in NewWorkItem) (version int) {
	if in.Priority != PriorityNone {
		c.Priority = in.Priority
	}
	if in.Type != TypeTask {
		c.Type = in.Type
	}
	c.Due, c.Estimate = in.Due, in.Estimate
	if c.Priority != "" || c.Type != "" || c.Due != "" || c.Estimate != 0 {
		return FieldsFormat
	}
	return 0
}

func formatEstimate(e float64) string { return strconv.FormatFloat(e, 'g', -1, 64) }

// setItemFields changes the fields a record names (nil: left alone), each
// change a history row, and marks the side row to be written.
func (a *apply) setItemFields(it *itemRow, priority, due *string, estimate *float64, typ *string) {
	if priority != nil && slices.Contains(Priorities, *priority) && priorityRank(*priority) != it.Priority {
		old := priorityName(it.Priority)
		it.Priority = priorityRank(*priority)
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
func (a *apply) createdFields(it *itemRow, c *createWorkItem) {
	it.Type = TypeTask
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
