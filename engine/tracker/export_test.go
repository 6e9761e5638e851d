package tracker

import (
	"context"
	"database/sql"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// GetWorkItemBothWays answers get_work_item's item and comments for key
// twice from db: by the one statement a read without a transaction runs
// (getItemQuery), and by the statements of getWorkItemTx in a read
// transaction; seen is the one statement's checkpoint.
func GetWorkItemBothWays(ctx context.Context, s *Service, db *sql.DB, key string) (one, inTx ItemRead, seen uint64, err error) {
	if one, err = scanItemRead(db.QueryRowContext(ctx, getItemQuery, key), &seen); err != nil {
		return one, inTx, seen, err
	}
	tx, err := sqlite.BeginRead(ctx, db)
	if err != nil {
		return one, inTx, seen, err
	}
	defer tx.Rollback()
	inTx.Comments = []Comment{}
	_, err = s.getWorkItemTx(ctx, tx, key, &inTx)
	return one, inTx, seen, err
}
