package trackapply

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/crewlet/crewlet/engine/statelog"
)

var _ statelog.Relayer = Domain{}

// Relay rewrites the tables of a file an earlier build wrote into the
// layouts this build declares, in the open's schema transaction before
// the schema runs, so a kill at any point leaves each old table or its new
// one whole; the indexes the old tables took with them are made again by
// the schema that follows. The rows are copied as they are, column for
// column:
//
//   - tracker_items, a WITHOUT ROWID table keyed by id up to the build
//     that made it a rowid table keyed by doc (itemsColumns);
//   - tracker_history, a WITHOUT ROWID table keyed by (item, seq, n) up
//     to the build that made it an appended rowid table with the item's
//     doc (historyColumns), each row given its item's doc.
//
// It answers the tables it rewrote: none for a file already relaid, or a
// new one (no table yet).
func (Domain) Relay(ctx context.Context, tx *sql.Tx) ([]string, error) {
	var out []string
	history := false
	for _, t := range []struct {
		table string
		relay func(context.Context, *sql.Tx) error
	}{{"tracker_items", relayItems}, {"tracker_history", relayHistory}} {
		ddl, err := tableDDL(ctx, tx, t.table)
		if err != nil {
			return out, err
		}
		history = history || (t.table == "tracker_history" && ddl != "")
		if !strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID") {
			continue
		}
		if err := t.relay(ctx, tx); err != nil {
			return out, fmt.Errorf("relay %s: %w", t.table, err)
		}
		out = append(out, t.table)
	}
	// A row an older build wrote on a file of this layout whose trigger
	// found no item yet: given its doc now (the index holds the NULLs
	// first, so a file with none reads one entry).
	if history {
		if _, err := tx.ExecContext(ctx, `UPDATE tracker_history SET doc = (SELECT doc FROM tracker_items WHERE id = tracker_history.item) WHERE doc IS NULL`); err != nil {
			return out, err
		}
	}
	return out, nil
}

// tableDDL is the table's CREATE TABLE, "" where the file has none.
func tableDDL(ctx context.Context, tx *sql.Tx, table string) (string, error) {
	var ddl string
	err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = ?`, table).Scan(&ddl)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return ddl, err
}

// columnsOf is the table's columns as a quoted list, in their order: the
// older table's columns are copied by name, so a column a later build
// adds (with its default) is no reason to fail.
func columnsOf(ctx context.Context, tx *sql.Tx, table, prefix string) (string, error) {
	var cols string
	err := tx.QueryRowContext(ctx, `SELECT group_concat(? || '"' || name || '"', ', ') FROM (SELECT name FROM pragma_table_info(?) ORDER BY cid)`, prefix, table).Scan(&cols)
	return cols, err
}

func relayItems(ctx context.Context, tx *sql.Tx) error {
	cols, err := columnsOf(ctx, tx, "tracker_items", "")
	if err != nil {
		return err
	}
	// The history's trigger names tracker_items, and a rename checks
	// every trigger: it goes for the moment the table does not exist, and
	// the schema after the relay makes it again.
	return execAll(ctx, tx,
		`DROP TRIGGER IF EXISTS tracker_history_older`,
		`CREATE TABLE tracker_items_relaid (`+itemsColumns+`)`,
		`INSERT INTO tracker_items_relaid (`+cols+`) SELECT `+cols+` FROM tracker_items`,
		`DROP TABLE tracker_items`,
		`ALTER TABLE tracker_items_relaid RENAME TO tracker_items`)
}

// relayHistory copies the rows in the order a node appends them (by
// sequence), each with its item's doc. Every history row has its item
// (a purge deletes both in one apply): a row without one fails the open,
// where copying it without a doc would hide it from every reader.
func relayHistory(ctx context.Context, tx *sql.Tx) error {
	cols, err := columnsOf(ctx, tx, "tracker_history", "")
	if err != nil {
		return err
	}
	hcols, err := columnsOf(ctx, tx, "tracker_history", "h.")
	if err != nil {
		return err
	}
	var rows int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM tracker_history`).Scan(&rows); err != nil {
		return err
	}
	if err := execAll(ctx, tx, `CREATE TABLE tracker_history_relaid (`+historyColumns+`)`); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, `INSERT INTO tracker_history_relaid (`+cols+`, doc) SELECT `+hcols+`, i.doc
		FROM tracker_history h JOIN tracker_items i ON i.id = h.item ORDER BY h.seq, h.n, h.item`)
	if err != nil {
		return err
	}
	if copied, _ := res.RowsAffected(); copied != rows {
		return fmt.Errorf("%d of its %d rows name an item the file does not hold", rows-copied, rows)
	}
	return execAll(ctx, tx, `DROP TABLE tracker_history`, `ALTER TABLE tracker_history_relaid RENAME TO tracker_history`)
}

func execAll(ctx context.Context, tx *sql.Tx, qs ...string) error {
	for _, q := range qs {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}
