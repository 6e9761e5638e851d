package tools

// The work item fields (priority, due, estimate, type) and named
// transitions as create_work_item and update_work_item take them.

import (
	"github.com/crewlet/crewlet/engine/tracker"
)

// fieldParams declares the item fields: a create's say their defaults, an
// update's how to clear.
func fieldParams(update bool) []param {
	pd, td, dd, ed := "Default none.", "Default task.", "YYYY-MM-DD.", "0 = none."
	if update {
		pd, td, dd, ed = "", "", "YYYY-MM-DD; empty clears.", "0 clears."
	}
	return []param{
		{name: "priority", kind: kindString, enum: tracker.Priorities, desc: pd},
		{name: "due", kind: kindString, maxBytes: len(tracker.DueLayout), desc: dd},
		{name: "estimate", kind: kindNumber, max: tracker.MaxEstimate, desc: ed},
		{name: "type", kind: kindString, enum: tracker.ItemTypes, desc: td},
	}
}

// transitionParam is update_work_item's transition; the allowed set is in
// the tool's description.
var transitionParam = param{name: "transition", kind: kindString, enum: tracker.TransitionNames(), desc: "Instead of status."}

// transitionSentence ends update_work_item's description.
var transitionSentence = " Transitions: " + tracker.TransitionRules() + "."

// newItemFields fills a create's fields from its arguments.
func newItemFields(in *tracker.NewWorkItem, a args) {
	in.Priority, in.Due, in.Estimate, in.Type = a.str("priority"), a.str("due"), a.num("estimate"), a.str("type")
}

// patchFields fills an update's fields and transition from its arguments.
func patchFields(p *tracker.ItemPatch, a args) {
	p.Priority, p.Due, p.Estimate, p.Type = a.strPtr("priority"), a.strPtr("due"), a.numPtr("estimate"), a.strPtr("type")
	p.Transition = a.str("transition")
}
