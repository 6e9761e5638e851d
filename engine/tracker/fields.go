package tracker

// The checks of the item fields a later build added (priority, due,
// estimate, type), and how a create's record carries them: a record
// carrying one of them is stamped trackrec.FieldsFormat, so an older build
// retains it rather than drop the field. The side table that holds them
// is the apply side's (trackapply/fields.go).

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// DueLayout is a due date's form, YYYY-MM-DD.
const DueLayout = "2006-01-02"

// MaxEstimate bounds an estimate (in whatever unit the team counts).
const MaxEstimate = 1e6

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
func createFields(c *trackrec.CreateWorkItem, in NewWorkItem) (version int) {
	if in.Priority != PriorityNone {
		c.Priority = in.Priority
	}
	if in.Type != TypeTask {
		c.Type = in.Type
	}
	c.Due, c.Estimate = in.Due, in.Estimate
	if c.Priority != "" || c.Type != "" || c.Due != "" || c.Estimate != 0 {
		return trackrec.FieldsFormat
	}
	return 0
}
