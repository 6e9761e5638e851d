package kbrec

// Record kinds of the knowledge-base domain.
const (
	KindCreateSpace = "pages.create_space"
	KindUpdateSpace = "pages.update_space"
	KindCreatePage  = "pages.create_page"
	KindUpdatePage  = "pages.update_page"
	KindPurgePage   = "pages.purge_page"
)

// Record kinds of the lifecycle: new kinds rather than new fields on the
// old ones, so a build that predates them applies nothing of them (rather
// than half of a record it cannot read).
const (
	// KindArchiveSpace is update_space with archived: the settings it
	// carries apply as update_space's, and the space is archived or back.
	KindArchiveSpace = "pages.archive_space"
	// KindMovePage is update_page with space: the page and its subtree
	// move to another space (with the title and body it carries).
	KindMovePage = "pages.move_page"
	// KindTrashPage trashes (or restores) a page and its subtree.
	KindTrashPage = "pages.trash_page"
	// KindComment adds, edits or deletes a comment on a page, on the
	// comment's own subject.
	KindComment = "pages.comment"
)

// A space's editing setting: locked refuses new pages and edits at
// decide time.
const (
	EditingOpen   = "open"
	EditingLocked = "locked"
)

// EditingValues lists the editing settings.
var EditingValues = []string{EditingOpen, EditingLocked}
