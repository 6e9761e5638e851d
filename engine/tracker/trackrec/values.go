package trackrec

import "slices"

// Statuses a work item can hold.
const (
	StatusOpen       = "open"
	StatusInProgress = "in_progress"
	StatusBlocked    = "blocked"
	StatusDone       = "done"
	StatusCancelled  = "cancelled"
)

// Statuses lists every status, in the order a board shows them.
var Statuses = []string{StatusOpen, StatusInProgress, StatusBlocked, StatusDone, StatusCancelled}

// Closed says whether a status ends the work (done, cancelled): leaving
// it is a reopen.
func Closed(status string) bool { return status == StatusDone || status == StatusCancelled }

// Priorities, least to most urgent; the default is none.
const (
	PriorityNone   = "none"
	PriorityLow    = "low"
	PriorityMedium = "medium"
	PriorityHigh   = "high"
	PriorityUrgent = "urgent"
)

// Priorities lists every priority, least urgent first: a priority's rank
// (what the rows store) is its place here.
var Priorities = []string{PriorityNone, PriorityLow, PriorityMedium, PriorityHigh, PriorityUrgent}

// PriorityRank is priority p's rank, 0 (none) for one it does not know.
func PriorityRank(p string) int64 { return int64(max(0, slices.Index(Priorities, p))) }

// PriorityName is the priority of a rank, none for one out of range.
func PriorityName(rank int64) string {
	if rank < 0 || rank >= int64(len(Priorities)) {
		return PriorityNone
	}
	return Priorities[rank]
}

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

// Edge kinds. A caller authors relates_to, duplicates and depends_on on an
// item; the other item carries the mirror (relates_to, duplicated_by,
// blocks), written by a record of its own.
const (
	EdgeRelatesTo    = "relates_to"
	EdgeDuplicates   = "duplicates"
	EdgeDuplicatedBy = "duplicated_by"
	EdgeDependsOn    = "depends_on"
	EdgeBlocks       = "blocks"
)

// AuthoredEdges are the kinds a caller may set.
var AuthoredEdges = []string{EdgeRelatesTo, EdgeDuplicates, EdgeDependsOn}

// MirrorOf is the kind the other item carries for an authored kind.
func MirrorOf(kind string) string {
	switch kind {
	case EdgeDuplicates:
		return EdgeDuplicatedBy
	case EdgeDependsOn:
		return EdgeBlocks
	}
	return EdgeRelatesTo
}

// Distinct is vals without the repeats of a value, in the order each
// first appears: a tag, watcher or dependency given twice is one. The
// service dedupes what it records with it, and the bulk apply the values
// a record carries (an older build's record may repeat one).
func Distinct(vals []string) []string {
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}
