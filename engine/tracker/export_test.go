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

// SetsColumns reads the sets column of item key from db as the apply's
// item read (loadItemByKeyQuery) and get_work_item's one statement
// (getItemQuery) read it, and whether noSets takes each for empty.
func SetsColumns(ctx context.Context, db *sql.DB, key string) (load, get string, loadEmpty, getEmpty bool, err error) {
	var l, g []byte
	if err = db.QueryRowContext(ctx, `SELECT sets FROM (`+loadItemByKeyQuery+`)`, key).Scan(&l); err != nil {
		return
	}
	if err = db.QueryRowContext(ctx, `SELECT sets FROM (`+getItemQuery+`)`, key).Scan(&g); err != nil {
		return
	}
	return string(l), string(g), noSets(l), noSets(g), nil
}

// CreatedAnswers is how many creates this process answered with the item
// their apply filed rather than one read back (domain.Answer).
func CreatedAnswers() uint64 { return createdAnswers.Load() }
