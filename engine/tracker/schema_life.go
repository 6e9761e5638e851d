package tracker

// The lifecycle tables and record kinds: comment edits, who wrote each
// record, a project's archived flag, a trash emptied, a bulk update that
// sets the assignee. New tables rather than new columns: a node whose file
// predates them gets them by CREATE TABLE IF NOT EXISTS (there is no
// column migration), and rows a record of an older build wrote read as
// the defaults (a comment at the version of its own record, a project not
// archived, no "by").

// lifeSchema joins the tracker's schema (Domain.Schema).
const lifeSchema = `
CREATE TABLE IF NOT EXISTS tracker_comment_versions (
	item    TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	version INTEGER NOT NULL,
	PRIMARY KEY (item, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tracker_record_by (
	seq INTEGER PRIMARY KEY,
	by  TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS tracker_project_state (
	key      TEXT PRIMARY KEY,
	archived INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
`

// Record kinds of the lifecycle tools. An older build applies none of them
// (a kind it does not know applies nothing), so none carries a change an
// older kind could half-apply.
const (
	// KindEditComment edits or deletes one comment, by its author only.
	KindEditComment = "tracker.edit_comment"
	// KindUpdateProject renames a project or archives it.
	KindUpdateProject = "tracker.update_project"
	// KindEmptyTrash opens empty_trash: it writes nothing; its sequence
	// is the cut-off (items trashed before it are the ones purged), so a
	// re-run under the same op id purges the same set and no later one.
	KindEmptyTrash = "tracker.empty_trash"
	// KindBulkSet is a bulk update that also sets the assignee (a field
	// tracker.bulk_update never carried).
	KindBulkSet = "tracker.bulk_set"
)

// editComment changes comment Comment (the sequence of the record that
// added it) on item ID: a new body, or deleted. It applies only where the
// comment's author is Author.
type editComment struct {
	ID      string `json:"id"`
	Comment uint64 `json:"comment"`
	Author  string `json:"author"`
	Body    string `json:"body,omitempty"`
	Delete  bool   `json:"delete,omitempty"`
}

type updateProject struct {
	Key      string  `json:"key"`
	Name     *string `json:"name,omitempty"`
	Archived *bool   `json:"archived,omitempty"`
}

type emptyTrash struct {
	Project string `json:"project"`
}
