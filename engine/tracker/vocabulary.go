package tracker

import "github.com/crewlet/crewlet/engine/tracker/trackrec"

// The values a work item holds, as the service's callers (the tools, the
// REST routes) name them; the record contract (trackrec) defines them.

// Statuses a work item can hold.
const (
	StatusOpen       = trackrec.StatusOpen
	StatusInProgress = trackrec.StatusInProgress
	StatusBlocked    = trackrec.StatusBlocked
	StatusDone       = trackrec.StatusDone
	StatusCancelled  = trackrec.StatusCancelled
)

// Statuses lists every status, in the order a board shows them.
var Statuses = trackrec.Statuses

// Priorities, least to most urgent; the default is none.
const (
	PriorityNone   = trackrec.PriorityNone
	PriorityLow    = trackrec.PriorityLow
	PriorityMedium = trackrec.PriorityMedium
	PriorityHigh   = trackrec.PriorityHigh
	PriorityUrgent = trackrec.PriorityUrgent
)

// Priorities lists every priority, least urgent first.
var Priorities = trackrec.Priorities

// Item types; the default is task.
const (
	TypeTask    = trackrec.TypeTask
	TypeBug     = trackrec.TypeBug
	TypeFeature = trackrec.TypeFeature
	TypeEpic    = trackrec.TypeEpic
	TypeChore   = trackrec.TypeChore
)

// ItemTypes lists every item type.
var ItemTypes = trackrec.ItemTypes

// Edge kinds: a caller authors relates_to, duplicates and depends_on; the
// other item carries the mirror (relates_to, duplicated_by, blocks).
const (
	EdgeRelatesTo    = trackrec.EdgeRelatesTo
	EdgeDuplicates   = trackrec.EdgeDuplicates
	EdgeDuplicatedBy = trackrec.EdgeDuplicatedBy
	EdgeDependsOn    = trackrec.EdgeDependsOn
	EdgeBlocks       = trackrec.EdgeBlocks
)

// AuthoredEdges are the kinds a caller may set.
var AuthoredEdges = trackrec.AuthoredEdges
