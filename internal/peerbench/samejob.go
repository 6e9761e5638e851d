package peerbench

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// The same job on rqlite: a work tracker written the way an rqlite user
// would write it, one transactional request per operation, so that a
// Crewlet create is compared with an rqlite create that keeps the same
// promises in its rows (an operation id that makes a retry harmless, the
// project's counter, the item with its unique key and number and the
// indexes a tracker lists by, its search entry and its history), rather
// than with a two-column insert (the toy rows). The statements are plain
// data, so a test runs them on SQLite itself (samejob_test.go).

// sameJobSchema is the tracker's tables on rqlite, created by the bench.
var sameJobSchema = []string{
	// ops is the idempotency table: a retried request with the same
	// operation id fails its transaction on the primary key and changes
	// nothing.
	`CREATE TABLE IF NOT EXISTS ops (op_id TEXT PRIMARY KEY, at INTEGER NOT NULL) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS projects (key TEXT PRIMARY KEY, name TEXT NOT NULL, last_number INTEGER NOT NULL DEFAULT 0) WITHOUT ROWID`,
	// id is the rowid, which the search index's rows are keyed by.
	`CREATE TABLE IF NOT EXISTS items (
		id          INTEGER PRIMARY KEY,
		key         TEXT NOT NULL UNIQUE,
		project     TEXT NOT NULL,
		number      INTEGER NOT NULL,
		title       TEXT NOT NULL,
		description TEXT NOT NULL,
		status      TEXT NOT NULL,
		assignee    TEXT NOT NULL,
		version     INTEGER NOT NULL,
		created_at  INTEGER NOT NULL,
		updated_at  INTEGER NOT NULL,
		UNIQUE (project, number))`,
	`CREATE INDEX IF NOT EXISTS items_status ON items(project, status)`,
	`CREATE INDEX IF NOT EXISTS items_assignee ON items(assignee)`,
	`CREATE INDEX IF NOT EXISTS items_updated ON items(updated_at)`,
	`CREATE TABLE IF NOT EXISTS item_tags (item INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (item, tag)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS item_watchers (item INTEGER NOT NULL, watcher TEXT NOT NULL, PRIMARY KEY (item, watcher)) WITHOUT ROWID`,
	`CREATE TABLE IF NOT EXISTS item_fields (item INTEGER PRIMARY KEY, priority TEXT NOT NULL, due TEXT NOT NULL, estimate REAL NOT NULL, type TEXT NOT NULL)`,
	`CREATE TABLE IF NOT EXISTS history (item INTEGER NOT NULL, field TEXT NOT NULL, old TEXT NOT NULL, new TEXT NOT NULL, at INTEGER NOT NULL)`,
	`CREATE INDEX IF NOT EXISTS history_item ON history(item)`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS items_fts USING fts5(title, description, tokenize = 'unicode61 remove_diacritics 2')`,
}

// stmt is one parameterised statement: rqlite's ["SQL", args...].
type stmt []any

func st(sql string, args ...any) stmt { return append(stmt{sql}, args...) }

// sqlOf and argsOf split a stmt.
func (s stmt) sqlOf() string { return s[0].(string) }
func (s stmt) argsOf() []any { return s[1:] }

// newProject files a project with its counter at zero.
func newProject(key, name string) []stmt {
	return []stmt{st(`INSERT OR IGNORE INTO projects(key, name, last_number) VALUES(?, ?, 0)`, key, name)}
}

// thisItem picks the item a create just numbered: the project's counter
// as the create's own transaction left it.
const thisItem = `project = ? AND number = (SELECT last_number FROM projects WHERE key = ?)`

// createTxn is one create: the idempotency row, the counter bumped, the
// item numbered from it, its history row and its search row.
func createTxn(op, project, title, description, who string, at int64) []stmt {
	return []stmt{
		st(`INSERT INTO ops(op_id, at) VALUES(?, ?)`, op, at),
		st(`UPDATE projects SET last_number = last_number + 1 WHERE key = ?`, project),
		st(`INSERT INTO items(key, project, number, title, description, status, assignee, version, created_at, updated_at)
			SELECT key || '-' || last_number, key, last_number, ?, ?, 'open', ?, 1, ?, ? FROM projects WHERE key = ?`,
			title, description, who, at, at, project),
		st(`INSERT INTO history(item, field, old, new, at) SELECT id, 'created', '', ?, ? FROM items WHERE `+thisItem, title, at, project, project),
		st(`INSERT INTO items_fts(rowid, title, description) SELECT id, title, description FROM items WHERE `+thisItem, project, project),
	}
}

// updateTxn is one conditional update of an item's title: applied only
// where the item is still at the version the caller read (if_match); the
// caller reads rows_affected of its second statement (0: stale). The
// history and search rows follow the item only where it moved.
func updateTxn(op, key string, ifMatch int64, title string, at int64) []stmt {
	moved := `key = ? AND version = ?`
	return []stmt{
		st(`INSERT INTO ops(op_id, at) VALUES(?, ?)`, op, at),
		st(`INSERT INTO history(item, field, old, new, at) SELECT id, 'title', title, ?, ? FROM items WHERE `+moved, title, at, key, ifMatch),
		st(`UPDATE items SET title = ?, version = version + 1, updated_at = ? WHERE `+moved, title, at, key, ifMatch),
		// changes() is the rows the item's update just changed: the
		// version alone cannot say, since a stale caller's ifMatch+1 may
		// be the version another write already reached.
		st(`UPDATE items_fts SET title = ? WHERE changes() = 1 AND rowid = (SELECT id FROM items WHERE key = ?)`, title, key),
	}
}

// updateApplied is the statement of updateTxn whose rows_affected says
// whether the update applied.
const updateApplied = 2

// getQueries read one item with its fields, tags and watchers: three
// statements in one request, as a user of a relational API writes it.
func getQueries(key string) []stmt {
	return []stmt{
		st(`SELECT i.id, i.key, i.project, i.number, i.title, i.description, i.status, i.assignee, i.version, i.created_at, i.updated_at,
			coalesce(f.priority, 'none'), coalesce(f.due, ''), coalesce(f.estimate, 0), coalesce(f.type, 'task')
			FROM items i LEFT JOIN item_fields f ON f.item = i.id WHERE i.key = ?`, key),
		st(`SELECT tag FROM item_tags WHERE item = (SELECT id FROM items WHERE key = ?) ORDER BY tag`, key),
		st(`SELECT watcher FROM item_watchers WHERE item = (SELECT id FROM items WHERE key = ?) ORDER BY watcher`, key),
	}
}

// ftsMatch quotes every word of text, ANDed, as Crewlet's search does,
// so that neither target reads a word as an FTS5 operator.
func ftsMatch(text string) string {
	ws := strings.Fields(text)
	for i, w := range ws {
		ws[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(ws, " ")
}

// searchQuery is one page of a search: the best matches by bm25, titles
// weighted over descriptions as Crewlet weighs them, each with its key,
// title, status and a snippet.
func searchQuery(text string, limit int) stmt {
	return st(fmt.Sprintf(`SELECT i.key, i.title, i.status, snippet(items_fts, 1, '[', ']', '…', 12), bm25(items_fts, 10.0, 3.0) AS rank
		FROM items_fts JOIN items i ON i.id = items_fts.rowid WHERE items_fts MATCH ? ORDER BY rank LIMIT %d`, limit), ftsMatch(text))
}

// bulkTxn sets status to on every item of project whose status is from,
// in one transaction: the idempotency row, a history row each, the rows.
func bulkTxn(op, project, from, to string, at int64) []stmt {
	return []stmt{
		st(`INSERT INTO ops(op_id, at) VALUES(?, ?)`, op, at),
		st(`INSERT INTO history(item, field, old, new, at) SELECT id, 'status', status, ?, ? FROM items WHERE project = ? AND status = ?`, to, at, project, from),
		st(`UPDATE items SET status = ?, version = version + 1, updated_at = ? WHERE project = ? AND status = ?`, to, at, project, from),
	}
}

// seedItems files items first … first+n-1 of the corpus (corpusText)
// into project, numbered from number, with what a create writes, in as
// few statements as a bulk load takes: multi-row inserts, then the
// counter, the history and the search rows from the items themselves.
func seedItems(project string, number, first, n int, at int64) []stmt {
	var b strings.Builder
	args := make([]any, 0, 6*n)
	b.WriteString(`INSERT INTO items(key, project, number, title, description, status, assignee, version, created_at, updated_at) VALUES`)
	for j := 0; j < n; j++ {
		if j > 0 {
			b.WriteByte(',')
		}
		b.WriteString(`(?, ?, ?, ?, ?, 'open', ?, 1, ?, ?)`)
		title, desc := corpusText(first + j)
		args = append(args, fmt.Sprintf("%s-%d", project, number+j), project, number+j, title, desc, assignee(first+j), at, at)
	}
	last := number + n - 1
	return []stmt{
		st(b.String(), args...),
		st(`UPDATE projects SET last_number = max(last_number, ?) WHERE key = ?`, last, project),
		st(`INSERT INTO history(item, field, old, new, at) SELECT id, 'created', '', title, ? FROM items WHERE project = ? AND number BETWEEN ? AND ?`, at, project, number, last),
		st(`INSERT INTO items_fts(rowid, title, description) SELECT id, title, description FROM items WHERE project = ? AND number BETWEEN ? AND ?`, project, number, last),
	}
}

// dressItem gives an item the tags, watchers and fields a get reads.
func dressItem(key string, tags, watchers []string) []stmt {
	out := []stmt{st(`INSERT OR REPLACE INTO item_fields(item, priority, due, estimate, type) SELECT id, 'high', '2026-03-31', 3, 'bug' FROM items WHERE key = ?`, key)}
	for _, t := range tags {
		out = append(out, st(`INSERT OR IGNORE INTO item_tags(item, tag) SELECT id, ? FROM items WHERE key = ?`, t, key))
	}
	for _, w := range watchers {
		out = append(out, st(`INSERT OR IGNORE INTO item_watchers(item, watcher) SELECT id, ? FROM items WHERE key = ?`, w, key))
	}
	return out
}

// sameJobFiler is a target the same-job set-up files its rows on: txn
// runs statements as one transaction, scalar reads one number.
type sameJobFiler interface {
	txnOf(ctx context.Context, stmts []stmt) error
	scalar(ctx context.Context, q string, args ...any) (int64, error)
}

// fileSameJob files the tracker's schema, the projects the writes and
// reads use, their items, and the corpus where the plan searches or
// bulk-updates, on rqlite and on the SQL floor alike; rows an earlier run
// filed are kept (a project is filled from its counter on). It answers
// the version each worker's update item is at.
func fileSameJob(ctx context.Context, f sameJobFiler, p Plan) (versions [Workers]int64, err error) {
	var schema []stmt
	for _, s := range sameJobSchema {
		schema = append(schema, st(s))
	}
	for _, pr := range []string{"CR", "UP", "GT"} {
		schema = append(schema, newProject(pr, pr)...)
	}
	if err := f.txnOf(ctx, schema); err != nil {
		return versions, err
	}
	at := time.Now().UnixMilli()
	for _, pr := range []string{"UP", "GT"} {
		if err := fillSameJob(ctx, f, pr, 0, Workers, at); err != nil {
			return versions, err
		}
	}
	for w := 0; w < Workers; w++ {
		if err := f.txnOf(ctx, dressItem(fmt.Sprintf("GT-%d", w+1), []string{"backend", "perf"}, []string{"ann", "bob"})); err != nil {
			return versions, err
		}
		if versions[w], err = f.scalar(ctx, `SELECT version FROM items WHERE key = ?`, fmt.Sprintf("UP-%d", w+1)); err != nil {
			return versions, err
		}
	}
	if !p.filesCorpus() {
		return versions, nil
	}
	for j := 0; j < p.corpusProjects(); j++ {
		pr := corpusProject(j)
		if err := f.txnOf(ctx, newProject(pr, pr)); err != nil {
			return versions, err
		}
		if err := fillSameJob(ctx, f, pr, j*p.BulkItems, min(p.BulkItems, p.Corpus-j*p.BulkItems), at); err != nil {
			return versions, err
		}
	}
	return versions, nil
}

// fillSameJob files items into project until it holds n, the corpus's
// items from first on, a thousand a transaction.
func fillSameJob(ctx context.Context, f sameJobFiler, project string, first, n int, at int64) error {
	have, err := f.scalar(ctx, `SELECT last_number FROM projects WHERE key = ?`, project)
	if err != nil {
		return err
	}
	for k := int(have); k < n; k += 1000 {
		if err := f.txnOf(ctx, seedItems(project, k+1, first+k, min(1000, n-k), at)); err != nil {
			return err
		}
	}
	return nil
}
