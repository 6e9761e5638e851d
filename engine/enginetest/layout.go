package enginetest

import (
	"context"
	"database/sql"
	"fmt"
)

// olderItemsLayout is tracker_items as builds before the rowid layout
// made it: a WITHOUT ROWID table keyed by id, doc a unique column. It is
// frozen here, as those builds wrote it, whatever the current layout is.
const olderItemsLayout = `CREATE TABLE tracker_items_older (
	id             TEXT PRIMARY KEY,
	doc            INTEGER NOT NULL UNIQUE,
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
) WITHOUT ROWID`

// OlderItemsLayout rewrites db's tracker_items, rows as they are, into the
// layout of builds before it became a rowid table, in one transaction, and
// then runs schema (the tracker's, which makes its indexes again): a file
// such a build wrote, or a live node of one.
func OlderItemsLayout(ctx context.Context, db *sql.DB, schema string) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, q := range []string{olderItemsLayout, `INSERT INTO tracker_items_older SELECT * FROM tracker_items`, `DROP TABLE tracker_items`,
		`ALTER TABLE tracker_items_older RENAME TO tracker_items`, schema} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("older items layout: %w", err)
		}
	}
	return tx.Commit()
}
