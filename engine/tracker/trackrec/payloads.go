package trackrec

// The payloads of the record kinds, as they go on the wire. A field is
// only ever added (an older build ignores it) under a kind or a format
// version that keeps an older build from applying the record without it.

// CreateProject is KindCreateProject's payload.
type CreateProject struct {
	Key  string `json:"key"`
	Name string `json:"name"`
}

// EdgeRef is one edge of an item to the item Other, of Kind.
type EdgeRef struct {
	Kind  string `json:"kind"`
	Other string `json:"other"` // item id
}

// CreateWorkItem is KindCreateWorkItem's payload.
type CreateWorkItem struct {
	ID          string    `json:"id"`
	Project     string    `json:"project"`
	Number      int64     `json:"number"` // the number decided; the apply files the next free one
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	Assignee    string    `json:"assignee"`
	Parent      string    `json:"parent,omitempty"`
	Tags        []string  `json:"tags,omitempty"`
	Edges       []EdgeRef `json:"edges,omitempty"`
	// The item fields (format version 2): left out at their defaults.
	Priority string  `json:"priority,omitempty"`
	Due      string  `json:"due,omitempty"`
	Estimate float64 `json:"estimate,omitempty"`
	Type     string  `json:"type,omitempty"`
}

// UpdateWorkItem is KindUpdateWorkItem's payload: nil fields are left
// alone.
type UpdateWorkItem struct {
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
	AddEdges       []EdgeRef `json:"add_edges,omitempty"`
	RemoveEdges    []EdgeRef `json:"remove_edges,omitempty"`
	// The item fields (format version 2): nil is unchanged; due "" clears.
	Priority *string  `json:"priority,omitempty"`
	Due      *string  `json:"due,omitempty"`
	Estimate *float64 `json:"estimate,omitempty"`
	Type     *string  `json:"type,omitempty"`
}

// MirrorEdges (KindMirrorEdges) writes (or takes down) mirror edges on
// ID, the other end of edges other items authored.
type MirrorEdges struct {
	ID     string    `json:"id"`
	Add    []EdgeRef `json:"add,omitempty"`
	Remove []EdgeRef `json:"remove,omitempty"`
}

// Comment is KindComment's payload: a comment added to item ID.
type Comment struct {
	ID     string `json:"id"`
	Author string `json:"author"`
	Body   string `json:"body"`
}

// Mark is KindMark's payload: a gesture's mark on item ID.
type Mark struct {
	ID   string `json:"id"`
	Mark string `json:"mark"` // "" takes the mark down
}

// Move is KindMove's payload: item ID moves to project To.
type Move struct {
	ID string `json:"id"`
	To string `json:"to"` // project key
}

// MergeDuplicate is KindMergeDuplicate's payload.
type MergeDuplicate struct {
	ID   string `json:"id"`   // the duplicate
	Into string `json:"into"` // the item it is merged into
}

// Trash is KindTrash's payload: item ID goes to the trash with the
// subtree of Root.
type Trash struct {
	ID   string `json:"id"`
	Root string `json:"root"`
}

// Restore is KindRestore's payload.
type Restore struct {
	ID string `json:"id"`
}

// Purge is KindPurge's payload.
type Purge struct {
	ID string `json:"id"`
}

// BulkUpdate is the payload of KindBulkUpdate and KindBulkSet.
type BulkUpdate struct {
	Project     string   `json:"project"`
	Items       []string `json:"items"`
	AddTags     []string `json:"add_tags,omitempty"`
	AddWatchers []string `json:"add_watchers,omitempty"`
	Status      *string  `json:"status,omitempty"`
	// Assignee is carried by tracker.bulk_set only.
	Assignee *string `json:"assignee,omitempty"`
}

// RowsPerItem is the most rows the record writes for one of its items:
// the item's row, a set row and a history row per tag and watcher, a
// history row for the status and for the assignee. The tracker cuts a
// bulk update into records of at most statelog.MaxTxRows rows by it, and
// the applier reads it ahead of applying one (trackapply.Domain's
// RowsAhead).
func (b BulkUpdate) RowsPerItem() int {
	per := 1 + 2*(len(b.AddTags)+len(b.AddWatchers))
	if b.Status != nil {
		per++
	}
	if b.Assignee != nil {
		per++
	}
	return per
}

// EditComment (KindEditComment) changes comment Comment (the sequence of
// the record that added it) on item ID: a new body, or deleted. It
// applies only where the comment's author is Author.
type EditComment struct {
	ID      string `json:"id"`
	Comment uint64 `json:"comment"`
	Author  string `json:"author"`
	Body    string `json:"body,omitempty"`
	Delete  bool   `json:"delete,omitempty"`
}

// UpdateProject is KindUpdateProject's payload.
type UpdateProject struct {
	Key      string  `json:"key"`
	Name     *string `json:"name,omitempty"`
	Archived *bool   `json:"archived,omitempty"`
}

// EmptyTrash is KindEmptyTrash's payload.
type EmptyTrash struct {
	Project string `json:"project"`
}
