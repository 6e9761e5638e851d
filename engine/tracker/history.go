package tracker

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// MaxReadHistory is how many of an item's newest changes a history read
// returns.
const MaxReadHistory = 200

// Change is one field change in an item's history: the log sequence of the
// record that made it (its position's sequence on the tracker log), the
// field, the value before and after, and when it was applied.
type Change struct {
	Seq   uint64    `json:"seq"`
	Field string    `json:"field"`
	Old   string    `json:"old"`
	New   string    `json:"new"`
	At    time.Time `json:"at"`
}

// HistoryRead answers an item's history: its newest changes, oldest first.
type HistoryRead struct {
	engine.ReadInfo
	Key     string   `json:"key"`
	Changes []Change `json:"changes"`
}

// ItemHistory reads the newest MaxReadHistory changes of the item under
// key, at the level r asks (linearizable when it names none), with the
// same scope as GetWorkItem: a retained record about the item refuses
// deferred rather than answering a history with a hole.
func (s *Service) ItemHistory(ctx context.Context, r engine.ReadOptions, key string) (HistoryRead, error) {
	if err := checkItemKey(key); err != nil {
		return HistoryRead{}, err
	}
	out := HistoryRead{Key: key, Changes: []Change{}}
	info, err := s.replica.ReadObject(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		id, err := s.resolve(ctx, tx, key)
		if err != nil {
			return []string{trackrec.ProjectScope(key[:strings.LastIndexByte(key, '-')])}, err
		}
		scope, err := itemScope(ctx, tx, id)
		if err != nil {
			return scope, err
		}
		rows, err := s.replica.Prepared(tx).QueryContext(ctx, `SELECT seq, field, old, new, at FROM (SELECT seq, n, field, old, new, at FROM tracker_history WHERE doc = (SELECT doc FROM tracker_items WHERE id = ?) ORDER BY seq DESC, n DESC LIMIT ?) ORDER BY seq, n`, id, MaxReadHistory)
		if err != nil {
			return scope, err
		}
		defer rows.Close()
		for rows.Next() {
			var c Change
			var at int64
			if err := rows.Scan(&c.Seq, &c.Field, &c.Old, &c.New, &at); err != nil {
				return scope, err
			}
			c.At = time.Unix(0, at).UTC()
			out.Changes = append(out.Changes, c)
		}
		return scope, rows.Err()
	})
	out.ReadInfo = info
	return out, err
}
