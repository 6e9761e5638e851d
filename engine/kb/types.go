package kb

import (
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/kb/kbrec"
	"github.com/crewlet/crewlet/engine/semantic"
)

// Limits on input, enforced before anything is published.
const (
	MaxNameBytes  = 200
	MaxTitleBytes = 512
	// MaxBodyBytes bounds a page's Markdown body (and a space's page
	// template): a record carrying it stays well inside the broker's
	// 1 MiB message limit with its envelope and JSON escaping.
	MaxBodyBytes       = 256 << 10
	MaxQueryBytes      = 512
	MaxListLimit       = 200
	DefaultListLimit   = 50
	MaxSearchLimit     = 50
	DefaultSearchLimit = 10
)

// Editing settings of a space: open (pages take edits) or locked (pages
// refuse create, update and move until the space is opened again; an
// operator's purge still runs).
// The record contract (kbrec) defines them.
const (
	EditingOpen   = kbrec.EditingOpen
	EditingLocked = kbrec.EditingLocked
)

// EditingValues lists the editing settings.
var EditingValues = kbrec.EditingValues

// Space is a named tree of pages with its settings. Version is the
// sequence of the last record about the space itself; SettingsThrough the
// last one that changed a setting, which covers every page in the space.
type Space struct {
	Key             string    `json:"key"`
	Name            string    `json:"name"`
	PageTemplate    string    `json:"page_template"`
	Editing         string    `json:"editing"`
	Archived        bool      `json:"archived"`
	Version         uint64    `json:"version"`
	SettingsThrough uint64    `json:"settings_through"`
	Pages           int64     `json:"pages"`
	CreatedAt       time.Time `json:"created_at"`
	UpdatedAt       time.Time `json:"updated_at"`
}

// Page is one page of a space. Parent is the id of the page it sits under,
// empty at the top of the space. Version is the sequence of the last record
// on the page's own subject (if_match compares against it);
// ScopedThrough the last record that changed what this answer shows without
// being about the page (a purge re-filing it, a space's settings). A read
// barrier compares MAX(version, scoped_through).
type Page struct {
	ID            string    `json:"id"`
	Space         string    `json:"space"`
	Parent        string    `json:"parent"`
	Title         string    `json:"title"`
	Body          string    `json:"body"`
	Editing       string    `json:"editing"`
	Trashed       bool      `json:"trashed"`
	Version       uint64    `json:"version"`
	ScopedThrough uint64    `json:"scoped_through"`
	CreatedAt     time.Time `json:"created_at"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// PageSummary is a page in a listing: everything but the body.
type PageSummary struct {
	ID            string    `json:"id"`
	Space         string    `json:"space"`
	Parent        string    `json:"parent"`
	Title         string    `json:"title"`
	Children      int64     `json:"children"`
	Version       uint64    `json:"version"`
	ScopedThrough uint64    `json:"scoped_through"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// SpacePatch is the input of update_space: nil fields are left alone.
type SpacePatch struct {
	Name         *string
	PageTemplate *string
	Editing      *string
	// Archived true archives the space (it takes no new pages and
	// list_spaces leaves it out); false brings it back.
	Archived *bool
}

// NewPage is the input of create_page. An empty Body takes the space's page
// template; an empty Parent files the page at the top of the space.
type NewPage struct {
	Space  string
	Title  string
	Body   string
	Parent string
}

// PagePatch is the input of update_page: nil fields are left alone. Parent
// set to "" moves the page to the top of its space; Space moves it with its
// subtree to another space (under Parent there, else at its top). Trashed
// true puts the page and its subtree in the trash, false restores them; it
// goes alone.
type PagePatch struct {
	Title   *string
	Body    *string
	Parent  *string
	Space   *string
	Trashed *bool
}

// PageFilter narrows list_pages. Parent nil lists the whole space; "" only
// its top-level pages; an id only that page's children.
type PageFilter struct {
	Space  string
	Parent *string
	Limit  int
	Cursor string
}

// SearchQuery is the input of search_knowledge. Query is words, matched as
// words (never as search syntax); a word ending in * matches as a prefix.
type SearchQuery struct {
	Query  string
	Space  string
	Limit  int
	Cursor string
}

// SpaceWrite answers create_space and update_space.
type SpaceWrite struct {
	engine.WriteResult
	Space *Space `json:"space,omitempty"`
}

// PageWrite answers create_page and update_page.
type PageWrite struct {
	engine.WriteResult
	Page *Page `json:"page,omitempty"`
}

// PurgeWrite answers purge_page: the purged page and the children it
// re-filed, with where they went.
type PurgeWrite struct {
	engine.WriteResult
	ID        string   `json:"id"`
	Space     string   `json:"space,omitempty"`
	Refiled   []string `json:"refiled"`
	RefiledTo string   `json:"refiled_to"`
}

// SpaceList answers list_spaces.
type SpaceList struct {
	engine.ReadInfo
	Spaces     []Space `json:"spaces"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// PageRead answers get_page.
type PageRead struct {
	engine.ReadInfo
	Page     Page      `json:"page"`
	Comments []Comment `json:"comments"`
}

// PageList answers list_pages.
type PageList struct {
	engine.ReadInfo
	Pages      []PageSummary `json:"pages"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// Hit is one search result: the page, a snippet around the match and its
// rank. TitleMatch says every word of the query is in the title; such
// pages rank before the rest. Score is bm25 within the hit's group (lower
// is better): the title group's over titles, the rest's over whole pages.
//
// Under hybrid ranking Score is the reciprocal-rank-fusion score of the
// word ranking and the vector ranking (higher first) and Similarity the
// page's cosine similarity to the query where it is among the nearest;
// under words alone Score is the rank within the hit's group.
type Hit struct {
	ID         string   `json:"id"`
	Space      string   `json:"space"`
	Parent     string   `json:"parent"`
	Title      string   `json:"title"`
	Snippet    string   `json:"snippet"`
	TitleMatch bool     `json:"title_match"`
	Score      float64  `json:"score"`
	Version    uint64   `json:"version"`
	Similarity *float64 `json:"similarity,omitempty"`
}

// SearchResult answers search_knowledge. Ranking says how its hits are
// ranked (hybrid: words and vectors fused; bm25: words alone), Coverage
// how many of the node's pages have a vector.
type SearchResult struct {
	engine.ReadInfo
	Hits       []Hit              `json:"hits"`
	NextCursor string             `json:"next_cursor,omitempty"`
	Ranking    string             `json:"ranking"`
	Coverage   *semantic.Coverage `json:"coverage"`
}
