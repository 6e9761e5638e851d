package trackapply

// RulesVersion names the rules that compute the tracker's computed
// columns (reopens, a project's active count, updated_at, hand-off
// counts). Raise it whenever one of them is added or computed otherwise:
// the next boot of every node recomputes them once (statelog_rederived).
const RulesVersion = 1

// schema is the tracker's tables. version is the sequence of the last
// record about the row itself; scoped_through the last record that changed
// the row without being about it (a mirror edge, a merged duplicate, a
// re-parented child, a project a move filed into); every comparison reads
// max(version, scoped_through).
const schema = `
CREATE TABLE IF NOT EXISTS tracker_projects (
	key            TEXT PRIMARY KEY,
	name           TEXT NOT NULL,
	last_number    INTEGER NOT NULL DEFAULT 0,
	active         INTEGER NOT NULL DEFAULT 0,
	version        INTEGER NOT NULL,
	scoped_through INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tracker_items (` + itemsColumns + `);
CREATE INDEX IF NOT EXISTS tracker_items_parent ON tracker_items(parent) WHERE parent != '';
CREATE INDEX IF NOT EXISTS tracker_items_status ON tracker_items(project, status);
-- The trashed items alone, by project and status: with tracker_items_status
-- (covering), a project's active count (recount) is two index counts,
-- where reading trashed from every in-progress row was a sixth of a
-- maximal bulk update's apply (a row lookup per item, per record).
CREATE INDEX IF NOT EXISTS tracker_items_trashed ON tracker_items(project, status) WHERE trashed != 0;
CREATE TABLE IF NOT EXISTS tracker_item_keys (
	key TEXT PRIMARY KEY,
	id  TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tracker_tags (
	item TEXT NOT NULL,
	tag  TEXT NOT NULL,
	PRIMARY KEY (item, tag)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tracker_tags_tag ON tracker_tags(tag);
CREATE TABLE IF NOT EXISTS tracker_watchers (
	item    TEXT NOT NULL,
	watcher TEXT NOT NULL,
	PRIMARY KEY (item, watcher)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tracker_edges (
	item     TEXT NOT NULL,
	kind     TEXT NOT NULL,
	other    TEXT NOT NULL,
	authored INTEGER NOT NULL,
	PRIMARY KEY (item, kind, other)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tracker_edges_other ON tracker_edges(other);
CREATE TABLE IF NOT EXISTS tracker_comments (
	item   TEXT NOT NULL,
	seq    INTEGER NOT NULL,
	author TEXT NOT NULL,
	body   TEXT NOT NULL,
	at     INTEGER NOT NULL,
	PRIMARY KEY (item, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tracker_history (` + historyColumns + `);
CREATE UNIQUE INDEX IF NOT EXISTS tracker_history_doc ON tracker_history(doc, seq, n);
-- An older build writes no doc: the trigger fills it from the item, so a
-- file this build wrote serves that build too (a donor's snapshot in a
-- rolling upgrade, say). This build always writes it.
CREATE TRIGGER IF NOT EXISTS tracker_history_older AFTER INSERT ON tracker_history WHEN NEW.doc IS NULL BEGIN
	UPDATE tracker_history SET doc = (SELECT doc FROM tracker_items WHERE id = NEW.item) WHERE rowid = NEW.rowid;
END;
CREATE TABLE IF NOT EXISTS tracker_purged (
	id  TEXT PRIMARY KEY,
	key TEXT NOT NULL,
	seq INTEGER NOT NULL
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS tracker_search USING fts5(title, description, comments, tokenize = 'unicode61 remove_diacritics 2');
`

// itemsColumns are tracker_items' columns and constraints. It is a rowid
// table, doc its rowid: an item row carries its title and description,
// and a WITHOUT ROWID table (as it was up to this build) holds whole rows
// in the interior pages of its key's B-tree too, so every lookup by id
// read and compared through rows of a few hundred bytes. The columns keep
// their order and every value, so a file of either layout holds the same
// rows (Relay rewrites the older one) and hashes alike (snapshot's
// hashOrder keeps the table's hash in id order).
const itemsColumns = `
	id             TEXT NOT NULL UNIQUE,
	doc            INTEGER PRIMARY KEY NOT NULL,
	key            TEXT NOT NULL UNIQUE,
	project        TEXT NOT NULL,
	number         INTEGER NOT NULL,
	title          TEXT NOT NULL,
	description    TEXT NOT NULL,
	status         TEXT NOT NULL,
	assignee       TEXT NOT NULL,
	parent         TEXT NOT NULL DEFAULT '',
	reopens        INTEGER NOT NULL DEFAULT 0,
	handoffs       INTEGER NOT NULL DEFAULT 0,
	trashed        INTEGER NOT NULL DEFAULT 0,
	trash_root     TEXT NOT NULL DEFAULT '',
	mark           TEXT NOT NULL DEFAULT '',
	merged_into    TEXT NOT NULL DEFAULT '',
	version        INTEGER NOT NULL,
	scoped_through INTEGER NOT NULL DEFAULT 0,
	created_at     INTEGER NOT NULL,
	updated_at     INTEGER NOT NULL,
	UNIQUE (project, number)
`

// historyColumns are tracker_history's columns. It is a rowid table that
// appends, with the item's doc beside its id and a small index on (doc,
// seq, n): it was a WITHOUT ROWID table keyed by (item, seq, n) up to
// this build, so each record's history rows went beside the item's earlier
// ones, across the whole tree. A bulk touching 20 000 items wrote most of
// its pages there, more with every bulk (BenchmarkBulkOnCorpus). The
// columns before doc keep their order and every value, so a file of
// either layout holds the same rows (Relay rewrites the older one) and
// hashes alike (snapshot's hashOrder reads it in (item, seq, n) order and
// leaves doc out, which tracker_items.doc repeats). doc is NULL only for
// the moment between an older build's insert and the trigger that fills
// it.
const historyColumns = `
	item     TEXT NOT NULL,
	seq      INTEGER NOT NULL,
	n        INTEGER NOT NULL,
	field    TEXT NOT NULL,
	old      TEXT NOT NULL,
	new      TEXT NOT NULL,
	handoffs INTEGER NOT NULL,
	at       INTEGER NOT NULL,
	doc      INTEGER
`
