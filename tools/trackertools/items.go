package trackertools

// The work item fields (priority, due, estimate, type) and named
// transitions as create_work_item and update_work_item take them.

import (
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/tools"
)

// fieldParams declares the item fields: a create's say their defaults, an
// update's how to clear.
func fieldParams(update bool) []tools.Param {
	pd, td, dd, ed := "Default none.", "Default task.", "YYYY-MM-DD.", "0 = none."
	if update {
		pd, td, dd, ed = "", "", "YYYY-MM-DD; empty clears.", "0 clears."
	}
	return []tools.Param{
		{Name: "priority", Kind: tools.KindString, Enum: tracker.Priorities, Desc: pd},
		{Name: "due", Kind: tools.KindString, MaxBytes: len(tracker.DueLayout), Desc: dd},
		{Name: "estimate", Kind: tools.KindNumber, Max: tracker.MaxEstimate, Desc: ed},
		{Name: "type", Kind: tools.KindString, Enum: tracker.ItemTypes, Desc: td},
	}
}

// transitionParam is update_work_item's transition; the allowed set is in
// the tool's description.
var transitionParam = tools.Param{Name: "transition", Kind: tools.KindString, Enum: tracker.TransitionNames(), Desc: "Instead of status."}

// transitionSentence ends update_work_item's description.
var transitionSentence = " Transitions: " + tracker.TransitionRules() + "."

// newItemFields fills a create's fields from its arguments.
func newItemFields(in *tracker.NewWorkItem, a tools.Args) {
	in.Priority, in.Due, in.Estimate, in.Type = a.Str("priority"), a.Str("due"), a.Num("estimate"), a.Str("type")
}

// patchFields fills an update's fields and transition from its arguments.
func patchFields(p *tracker.ItemPatch, a tools.Args) {
	p.Priority, p.Due, p.Estimate, p.Type = a.StrPtr("priority"), a.StrPtr("due"), a.NumPtr("estimate"), a.StrPtr("type")
	p.Transition = a.Str("transition")
}
