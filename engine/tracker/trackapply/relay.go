package trackapply

import (
	"context"
	"database/sql"
	"strings"

	"github.com/crewlet/crewlet/engine/statelog"
)

var _ statelog.Relayer = Domain{}

// Relay rewrites a file whose tracker_items is still the WITHOUT ROWID
// table of earlier builds into the rowid table itemsColumns declares:
// the rows are copied as they are, column for column, in the open's
// schema transaction, so a kill at any point leaves the old table or the
// new one whole; the indexes the old table took with it are made again
// by the schema. A file already relaid answers nothing.
func (Domain) Relay(ctx context.Context, tx *sql.Tx) ([]string, error) {
	var ddl string
	if err := tx.QueryRowContext(ctx, `SELECT sql FROM sqlite_schema WHERE type = 'table' AND name = 'tracker_items'`).Scan(&ddl); err != nil {
		return nil, err
	}
	if !strings.Contains(strings.ToUpper(ddl), "WITHOUT ROWID") {
		return nil, nil
	}
	// The older table's columns, copied by name: a column a later build
	// adds to itemsColumns (with its default) is then no reason to fail.
	var cols string
	if err := tx.QueryRowContext(ctx, `SELECT group_concat('"' || name || '"', ', ') FROM (SELECT name FROM pragma_table_info('tracker_items') ORDER BY cid)`).Scan(&cols); err != nil {
		return nil, err
	}
	for _, q := range []string{
		`CREATE TABLE tracker_items_relaid (` + itemsColumns + `)`,
		`INSERT INTO tracker_items_relaid (` + cols + `) SELECT ` + cols + ` FROM tracker_items`,
		`DROP TABLE tracker_items`,
		`ALTER TABLE tracker_items_relaid RENAME TO tracker_items`,
		schema,
	} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return nil, err
		}
	}
	return []string{"tracker_items"}, nil
}
