package tracker

import (
	"time"

	"github.com/crewlet/crewlet/engine"
)

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

// Limits on input, enforced before anything is published.
const (
	MaxTitleBytes       = 512
	MaxDescriptionBytes = 64 << 10
	MaxNameBytes        = 200
	MaxAssigneeBytes    = 200
	MaxListLimit        = 200
	DefaultListLimit    = 50
)

// Project is a key prefix and a name; its items are numbered PREFIX-n.
type Project struct {
	Key        string    `json:"key"`
	Name       string    `json:"name"`
	Version    uint64    `json:"version"`
	LastNumber int64     `json:"last_number"`
	CreatedAt  time.Time `json:"created_at"`
}

// WorkItem is one tracked piece of work. Version is the stream sequence of
// the last record about the item itself; if_match compares against it.
type WorkItem struct {
	ID          string    `json:"id"`
	Key         string    `json:"key"`
	Project     string    `json:"project"`
	Number      int64     `json:"number"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	Assignee    string    `json:"assignee"`
	Version     uint64    `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// NewWorkItem is the input of create_work_item.
type NewWorkItem struct {
	Project     string
	Title       string
	Description string
	Status      string // empty: open
	Assignee    string
}

// ItemPatch is the input of update_work_item: nil fields are left alone.
type ItemPatch struct {
	Title       *string
	Description *string
	Status      *string
	Assignee    *string
}

// ListFilter narrows list_work_items. Cursor is the opaque token a previous
// page returned as next_cursor.
type ListFilter struct {
	Project  string
	Status   string
	Assignee string
	Limit    int
	Cursor   string
}

// ProjectWrite answers create_project.
type ProjectWrite struct {
	engine.WriteResult
	Project *Project `json:"project,omitempty"`
}

// ItemWrite answers create_work_item and update_work_item.
type ItemWrite struct {
	engine.WriteResult
	Item *WorkItem `json:"item,omitempty"`
}

// ProjectList answers list_projects.
type ProjectList struct {
	engine.ReadInfo
	Projects []Project `json:"projects"`
}

// ItemRead answers get_work_item.
type ItemRead struct {
	engine.ReadInfo
	Item WorkItem `json:"item"`
}

// ItemList answers list_work_items.
type ItemList struct {
	engine.ReadInfo
	Items      []WorkItem `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
}
