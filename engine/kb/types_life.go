package kb

import (
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Limits of the lifecycle reads and writes.
const (
	MaxCommentBytes = 64 << 10
	// MaxReadComments is how many comments get_page lists: the newest,
	// oldest first.
	MaxReadComments = 50
	// MaxSearchOffset bounds how deep search_knowledge pages: past it, a
	// narrower query serves better than another page.
	MaxSearchOffset = 500
)

// SpaceFilter narrows list_spaces: archived spaces are left out unless
// IncludeArchived; Limit and Cursor page it in key order.
type SpaceFilter struct {
	IncludeArchived bool
	Limit           int
	Cursor          string
}

// SpaceRead answers get_space.
type SpaceRead struct {
	engine.ReadInfo
	Space Space `json:"space"`
}

// PageQuery names the page get_page reads: by ID, or by Title within
// Space; Version, when set, reads that version of it (a record of the
// page's own, as list_page_versions lists them).
type PageQuery struct {
	ID      string
	Title   string
	Space   string
	Version uint64
}

// Comment is one comment on a page. Version is the sequence of the last
// record about the comment (its creation or its last edit).
type Comment struct {
	ID        string    `json:"id"`
	Author    string    `json:"author"`
	Body      string    `json:"body"`
	Version   uint64    `json:"version"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
}

// CommentWrite answers comment_on_page: the comment as the rows hold it
// after the write (absent after a delete).
type CommentWrite struct {
	engine.WriteResult
	Comment *Comment `json:"comment,omitempty"`
}

// PageVersion is one record of a page's own: who wrote it, when, at which
// position, and what the page was after it (get_page with version reads
// its body).
type PageVersion struct {
	Version  uint64    `json:"version"`
	Position string    `json:"position"`
	Kind     string    `json:"kind"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
	Space    string    `json:"space"`
	Parent   string    `json:"parent"`
	Title    string    `json:"title"`
	Trashed  bool      `json:"trashed"`
}

// VersionList answers list_page_versions, newest first.
type VersionList struct {
	engine.ReadInfo
	Versions   []PageVersion `json:"versions"`
	NextCursor string        `json:"next_cursor,omitempty"`
}
