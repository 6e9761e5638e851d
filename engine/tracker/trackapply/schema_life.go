package trackapply

// The lifecycle tables: comment edits, who wrote each record, a project's
// archived flag. New tables rather than new columns: a node whose file
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
