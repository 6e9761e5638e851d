package tracker

import (
	"context"
	"database/sql"
	"slices"

	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// itemScope is the declared scope of a record or a read about the items
// ids: each item, and membership of the project each is in
// (trackrec.InProject), so a retained record that changes a project (a
// bulk update, a create bumping its counter) defers what follows about
// the items in it. An id with no row (a create, a purged item) is named
// alone.
func itemScope(ctx context.Context, tx *sql.Tx, ids ...string) ([]string, error) {
	scope := make([]string, 0, 2*len(ids))
	for _, id := range ids {
		scope = append(scope, trackrec.ItemScope(id))
	}
	for _, id := range ids {
		var project string
		err := tx.QueryRowContext(ctx, `SELECT project FROM tracker_items WHERE id = ?`, id).Scan(&project)
		if err == sql.ErrNoRows {
			continue
		}
		if err != nil {
			return nil, err
		}
		if in := trackrec.InProject(project); !slices.Contains(scope, in) {
			scope = append(scope, in)
		}
	}
	return scope, nil
}
