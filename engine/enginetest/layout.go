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
	for _, q := range []string{`DROP TRIGGER IF EXISTS tracker_history_older`, olderItemsLayout, `INSERT INTO tracker_items_older SELECT * FROM tracker_items`, `DROP TABLE tracker_items`,
		`ALTER TABLE tracker_items_older RENAME TO tracker_items`, schema} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("older items layout: %w", err)
		}
	}
	return tx.Commit()
}

// olderHistoryLayout is tracker_history as builds before the appended
// layout made it: a WITHOUT ROWID table keyed by (item, seq, n), without
// the item's doc. Frozen here, as those builds wrote it.
const olderHistoryLayout = `CREATE TABLE tracker_history_older (
	item     TEXT NOT NULL,
	seq      INTEGER NOT NULL,
	n        INTEGER NOT NULL,
	field    TEXT NOT NULL,
	old      TEXT NOT NULL,
	new      TEXT NOT NULL,
	handoffs INTEGER NOT NULL,
	at       INTEGER NOT NULL,
	PRIMARY KEY (item, seq, n)
) WITHOUT ROWID`

// OlderHistoryLayout rewrites db's tracker_history, rows as they are, into
// the layout of builds before it appended (its index and trigger go with
// the table, as those builds had neither): a file such a build wrote. With
// items, tracker_items is put back too, its indexes made again from their
// own text, as builds before either layout change wrote the file.
func OlderHistoryLayout(ctx context.Context, db *sql.DB, items bool) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var indexes []string
	if items {
		rows, err := tx.QueryContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'tracker_items' AND sql IS NOT NULL`)
		if err != nil {
			return err
		}
		for rows.Next() {
			var q string
			if err := rows.Scan(&q); err != nil {
				rows.Close()
				return err
			}
			indexes = append(indexes, q)
		}
		rows.Close()
		indexes = append([]string{olderItemsLayout, `INSERT INTO tracker_items_older SELECT * FROM tracker_items`, `DROP TABLE tracker_items`,
			`ALTER TABLE tracker_items_older RENAME TO tracker_items`}, indexes...)
	}
	for _, q := range append([]string{olderHistoryLayout,
		`INSERT INTO tracker_history_older SELECT item, seq, n, field, old, new, handoffs, at FROM tracker_history`,
		`DROP TABLE tracker_history`, `ALTER TABLE tracker_history_older RENAME TO tracker_history`}, indexes...) {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("older history layout: %w", err)
		}
	}
	return tx.Commit()
}
