package tracker

import (
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/semantic"
)

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
	Key        string `json:"key"`
	Name       string `json:"name"`
	Version    uint64 `json:"version"`
	LastNumber int64  `json:"last_number"`
	// TaskCounts.Active is how many of the project's items are in progress
	// (not counting the trash), computed by the apply.
	TaskCounts TaskCounts `json:"task_counts"`
	CreatedAt  time.Time  `json:"created_at"`
	// Archived projects take no new items (update_project).
	Archived bool `json:"archived,omitempty"`
}

// WorkItem is one tracked piece of work. Version is the stream sequence of
// the last record about the item itself; if_match compares against it. It
// covers the item's own fields, status, tags, watchers, edges and parent:
// a comment (added, edited or deleted) never moves it.
type WorkItem struct {
	ID          string    `json:"id"`
	Key         string    `json:"key"`
	Project     string    `json:"project"`
	Number      int64     `json:"number"`
	Title       string    `json:"title"`
	Description string    `json:"description"`
	Status      string    `json:"status"`
	Assignee    string    `json:"assignee"`
	Priority    string    `json:"priority"` // none, low, medium, high, urgent
	Due         string    `json:"due"`      // YYYY-MM-DD, "" for none
	Estimate    float64   `json:"estimate"` // 0 for none
	Type        string    `json:"type"`     // task, bug, feature, epic, chore
	Version     uint64    `json:"version"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
	Parent      string    `json:"parent,omitempty"` // the parent's key
	Tags        []string  `json:"tags"`
	Watchers    []string  `json:"watchers"`
	Edges       []Edge    `json:"edges"`
	Reopens     int64     `json:"reopens"`
	Handoffs    int64     `json:"handoffs"`
	Trashed     bool      `json:"trashed,omitempty"`
	Mark        string    `json:"mark,omitempty"`        // a gesture in progress: moving:<project>, merging
	MergedInto  string    `json:"merged_into,omitempty"` // the key it was merged into
}

// Edge is one relation of an item to another. Mirror edges (blocks,
// duplicated_by, and relates_to written from the other side) are the other
// item's authored edge seen from here.
type Edge struct {
	Kind   string `json:"kind"`
	Key    string `json:"key"`
	Mirror bool   `json:"mirror,omitempty"`
}

// Comment is one comment on an item. ID is the sequence of the record
// that added it; Version that of the record that last edited it.
type Comment struct {
	ID      uint64    `json:"id"`
	Version uint64    `json:"version"`
	Author  string    `json:"author"`
	Body    string    `json:"body"`
	At      time.Time `json:"at"`
}

// TaskCounts are a project's computed counts.
type TaskCounts struct {
	Active int64 `json:"active"`
}

// NewWorkItem is the input of create_work_item.
type NewWorkItem struct {
	Project     string
	Title       string
	Description string
	Status      string // empty: open
	Assignee    string
	Tags        []string
	Parent      string   // a key
	DependsOn   []string // keys
	Priority    string   // empty: none
	Due         string   // YYYY-MM-DD or empty
	Estimate    float64  // 0: none
	Type        string   // empty: task
}

// ItemPatch is the input of update_work_item: nil fields are left alone.
type ItemPatch struct {
	Title                       *string
	Description                 *string
	Status                      *string
	Assignee                    *string
	Parent                      *string // a key; "" detaches
	AddTags, RemoveTags         []string
	AddWatchers, RemoveWatchers []string
	// AddEdges and RemoveEdges are authored edges (relates_to, duplicates,
	// depends_on) to other items by key; the other item's mirror is written
	// by a step of its own.
	AddEdges, RemoveEdges []Edge
	Priority, Due, Type   *string
	Estimate              *float64
	// Transition names a status change by its name (start, block, ...),
	// decided against the item's status: see Transitions.
	Transition string
}

// ListFilter narrows list_work_items. Cursor is the opaque token a previous
// page returned as next_cursor.
//
// Project, Status, Assignee, Tag, Priority and Type each take one value or
// several comma-separated (an item matches any of them); Keys is a batch
// get of up to MaxListKeys comma-separated keys; UpdatedSince is RFC 3339;
// Trashed lists only the trash; Sort is one of ListSorts (default key).
type ListFilter struct {
	Project      string
	Status       string
	Assignee     string
	Tag          string
	Parent       string // a key
	Limit        int
	Cursor       string
	Priority     string
	Type         string
	Keys         string
	UpdatedSince string
	Trashed      bool
	Sort         string
}

// ProjectWrite answers create_project.
type ProjectWrite struct {
	engine.WriteResult
	Project *Project `json:"project,omitempty"`
}

// ItemWrite answers create_work_item, update_work_item and every gesture.
type ItemWrite = GestureWrite

// ProjectList answers list_projects.
type ProjectList struct {
	engine.ReadInfo
	Projects []Project `json:"projects"`
}

// ItemRead answers get_work_item.
type ItemRead struct {
	engine.ReadInfo
	Item     WorkItem  `json:"item"`
	Comments []Comment `json:"comments"`
}

// Step is one record of a gesture: the task it writes, its own op id and
// how it ended. Outcome "" is a step the walk never reached.
type Step struct {
	Action   string         `json:"action"`
	Task     string         `json:"task"`
	OpID     string         `json:"op_id"`
	Outcome  engine.Outcome `json:"outcome"`
	Position string         `json:"position,omitempty"`
}

// GestureWrite answers a write made of several records in order (a move,
// a merge, an update with dependencies, a trash or restore). Outcome is
// applied when every step is; unknown when a step was, which ended the
// walk: retry with the same op_id to finish it.
type GestureWrite struct {
	engine.WriteResult
	Item  *WorkItem `json:"item,omitempty"`
	Steps []Step    `json:"steps,omitempty"`
	// OneSided names items whose mirror edge could not be vouched for:
	// the authored edge landed, its mirror's outcome is unknown.
	OneSided []string `json:"one_sided,omitempty"`
}

// SearchHit is one search result.
//
// Score ranks the hits, higher first: under hybrid ranking the
// reciprocal-rank-fusion score of the two rankings, under bm25 alone the
// (negated) bm25 score. BM25 is the hit's word score where its words
// matched, Similarity its cosine similarity to the query where it has a
// vector among the nearest.
type SearchHit struct {
	Key        string   `json:"key"`
	Title      string   `json:"title"`
	Status     string   `json:"status"`
	Snippet    string   `json:"snippet"`
	Score      float64  `json:"score"`
	BM25       *float64 `json:"bm25,omitempty"`
	Similarity *float64 `json:"similarity,omitempty"`
}

// SearchResult answers search_work_items. Ranking says how its hits are
// ranked (hybrid: words and vectors fused; bm25: words alone), Coverage
// how many of the node's work items have a vector.
type SearchResult struct {
	engine.ReadInfo
	Hits       []SearchHit        `json:"hits"`
	NextCursor string             `json:"next_cursor,omitempty"`
	Ranking    string             `json:"ranking"`
	Coverage   *semantic.Coverage `json:"coverage"`
}

// SearchQuery is search_work_items' input: Cursor is a previous page's
// next_cursor.
type SearchQuery struct {
	Query, Project string
	Limit          int
	Cursor         string
}

// PurgeResult answers purge_work_item.
type PurgeResult struct {
	engine.WriteResult
	Key string `json:"key"`
}

// ItemList answers list_work_items.
type ItemList struct {
	engine.ReadInfo
	Items      []WorkItem `json:"items"`
	NextCursor string     `json:"next_cursor,omitempty"`
	// Missing are the keys of a batch get no item answers to.
	Missing []string `json:"missing,omitempty"`
}

// TagCount is one tag and how many items (trash left out) carry it.
type TagCount struct {
	Tag   string `json:"tag"`
	Count int64  `json:"count"`
}

// TagList answers list_tags.
type TagList struct {
	engine.ReadInfo
	Tags []TagCount `json:"tags"`
}
