package tracker

import (
	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Record kinds of the tracker domain. A record is written at format
// version 1 unless it carries an item field (priority, due, estimate,
// type), which version 2 added (FieldsFormat).
const (
	KindCreateProject  = "tracker.create_project"
	KindCreateWorkItem = "tracker.create_work_item"
	KindUpdateWorkItem = "tracker.update_work_item"
	KindMirrorEdges    = "tracker.mirror_edges"
	KindComment        = "tracker.comment"
	KindMark           = "tracker.mark"
	KindMove           = "tracker.move_work_item"
	KindMergeDuplicate = "tracker.merge_duplicate"
	KindTrash          = "tracker.trash_work_item"
	KindRestore        = "tracker.restore_work_item"
	KindPurge          = "tracker.purge_work_item"
	KindBulkUpdate     = "tracker.bulk_update"
)

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

// Subjects of the tracker's stream.
func projectSubject(key string) string {
	return statelog.SubjectPrefix(engine.DomainTracker) + "project." + key
}
func itemSubject(id string) string {
	return statelog.SubjectPrefix(engine.DomainTracker) + "item." + id
}

// itemOfSubject is the item id a subject is about, "" for another.
func itemOfSubject(subject string) string {
	p := statelog.SubjectPrefix(engine.DomainTracker) + "item."
	if len(subject) > len(p) && subject[:len(p)] == p {
		return subject[len(p):]
	}
	return ""
}

// Payloads.
type createProject struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

type edgeRef struct {
	Kind  string `json:"kind"`
	Other string `json:"other"` // item id
}

type createWorkItem struct {
	ID          string    `json:"id"`
	Project     string    `json:"project"`
	Number      int64     `json:"number"` // the number decided; the apply files the next free one
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	Assignee    string    `json:"assignee"`
	Parent      string    `json:"parent,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	Edges       []edgeRef `json:"edges,omitempty"`
	// The item fields (format version 2): left out at their defaults.
	Priority string  `json:"priority,omitempty"`
	Due      string  `json:"due,omitempty"`
	Estimate float64 `json:"estimate,omitempty"`
	Type     string  `json:"type,omitempty"`
}

type updateWorkItem struct {
	ID             string    `json:"id"`
	Title          *string   `json:"title,omitempty"`
	Description    *string   `json:"description,omitempty"`
	Status         *string   `json:"status,omitempty"`
	Assignee       *string   `json:"assignee,omitempty"`
	Parent         *string   `json:"parent,omitempty"` // "" detaches
	AddTags        []string  `json:"add_tags,omitempty"`
	RemoveTags     []string  `json:"remove_tags,omitempty"`
	AddWatchers    []string  `json:"add_watchers,omitempty"`
	RemoveWatchers []string  `json:"remove_watchers,omitempty"`
	AddEdges       []edgeRef `json:"add_edges,omitempty"`
	RemoveEdges    []edgeRef `json:"remove_edges,omitempty"`
	// The item fields (format version 2): nil is unchanged; due "" clears.
	Priority *string  `json:"priority,omitempty"`
	Due      *string  `json:"due,omitempty"`
	Estimate *float64 `json:"estimate,omitempty"`
	Type     *string  `json:"type,omitempty"`
}

// mirrorEdges writes (or takes down) mirror edges on ID, the other end of
// edges other items authored.
type mirrorEdges struct {
	ID     string    `json:"id"`
	Add    []edgeRef `json:"add,omitempty"`
	Remove []edgeRef `json:"remove,omitempty"`
}

type comment struct {
	ID     string `json:"id"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

type mark struct {
	ID   string `json:"id"`
	Mark string `json:"mark"` // "" takes the mark down
}

type move struct {
	ID string `json:"id"`
	To string `json:"to"` // project key
}

type mergeDuplicate struct {
	ID   string `json:"id"`   // the duplicate
	Into string `json:"into"` // the item it is merged into
}

type trash struct {
	ID   string `json:"id"`
	Root string `json:"root"`
}

type restore struct {
	ID string `json:"id"`
}

type purge struct {
	ID string `json:"id"`
}

type bulkUpdate struct {
	Project     string   `json:"project"`
	Items       []string `json:"items"`
	AddTags     []string `json:"add_tags,omitempty"`
	AddWatchers []string `json:"add_watchers,omitempty"`
	Status      *string  `json:"status,omitempty"`
	// Assignee is carried by tracker.bulk_set only.
	Assignee *string `json:"assignee,omitempty"`
}
