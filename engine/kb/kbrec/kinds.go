package kbrec

// Record kinds of the knowledge-base domain.
const (
	KindCreateSpace = "pages.create_space"
	KindUpdateSpace = "pages.update_space"
	KindCreatePage  = "pages.create_page"
	KindUpdatePage  = "pages.update_page"
	KindPurgePage   = "pages.purge_page"
)

// Record kinds of the lifecycle, added after format 2: new kinds rather
// than new fields on the old ones, stamped 3 (Kinds), so a build that
// predates them retains them whole, with everything their scope meets,
// rather than apply nothing of them and leave its rows behind its peers'.
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

// LifecycleFormat is the record format version that added the lifecycle
// kinds (archive, move, trash, comments).
const LifecycleFormat = 3

// Kinds is every knowledge-base record kind with the lowest format
// version that applies it whole: the kinds of the first release at 1 (a
// page purge stays at 1 for good: it installs the deletion gate,
// GateKinds), the lifecycle kinds at LifecycleFormat. A test fails on a
// Kind constant without a decision here.
var Kinds = map[string]int{
	KindCreateSpace:  1,
	KindUpdateSpace:  1,
	KindCreatePage:   1,
	KindUpdatePage:   1,
	KindPurgePage:    1,
	KindArchiveSpace: LifecycleFormat,
	KindMovePage:     LifecycleFormat,
	KindTrashPage:    LifecycleFormat,
	KindComment:      LifecycleFormat,
}

// GateKinds are the knowledge base's records that install a gate: the
// page purge (the deletion gate's marker).
var GateKinds = []string{KindPurgePage}

// A space's editing setting: locked refuses new pages and edits at
// decide time.
const (
	EditingOpen   = "open"
	EditingLocked = "locked"
)

// EditingValues lists the editing settings.
var EditingValues = []string{EditingOpen, EditingLocked}
