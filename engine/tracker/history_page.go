package tracker

import (
	"context"
	"database/sql"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// Entry is one change in list_work_item_history: who (the record's "by":
// operator or seat:<seat>; empty for a record that named nobody) changed
// what, at which position of the tracker's log.
type Entry struct {
	Position string    `json:"position"`
	By       string    `json:"by,omitempty"`
	Field    string    `json:"field"`
	Old      string    `json:"old,omitempty"`
	New      string    `json:"new,omitempty"`
	At       time.Time `json:"at"`
}

// HistoryPage answers list_work_item_history: a page of an item's
// changes, newest first; NextCursor continues with older ones.
type HistoryPage struct {
	engine.ReadInfo
	Key        string  `json:"key"`
	Changes    []Entry `json:"changes"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// ListItemHistory reads a page of an item's history, newest first. The
// cursor names the last change a page returned (its sequence and place in
// its record): changes land only at newer sequences, so a later write
// neither shifts nor repeats a page.
func (s *Service) ListItemHistory(ctx context.Context, r engine.ReadOptions, key, cursor string, limit int) (HistoryPage, error) {
	if err := checkItemKey(key); err != nil {
		return HistoryPage{}, err
	}
	if limit == 0 {
		limit = DefaultListLimit
	}
	if limit < 0 || limit > MaxListLimit {
		return HistoryPage{}, invalid("limit %d is out of range; give 1 to %d.", limit, MaxListLimit)
	}
	beforeSeq, beforeN, err := historyCursor(cursor)
	if err != nil {
		return HistoryPage{}, err
	}
	out := HistoryPage{Key: key, Changes: []Entry{}}
	var seqs []uint64
	var ns []int64
	info, err := s.replica.ReadObject(ctx, linearizable(r), func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		id, err := s.resolve(ctx, tx, key)
		if err != nil {
			return []string{trackrec.ProjectScope(key[:strings.LastIndexByte(key, '-')])}, err
		}
		scope, err := itemScope(ctx, tx, id)
		if err != nil {
			return scope, err
		}
		rows, err := tx.QueryContext(ctx, `SELECT h.seq, h.n, coalesce(b.by, ''), h.field, h.old, h.new, h.at FROM tracker_history h
			LEFT JOIN tracker_record_by b ON b.seq = h.seq
			WHERE h.doc = (SELECT doc FROM tracker_items WHERE id = ?) AND (h.seq < ? OR (h.seq = ? AND h.n < ?)) ORDER BY h.seq DESC, h.n DESC LIMIT ?`,
			id, beforeSeq, beforeSeq, beforeN, limit+1)
		if err != nil {
			return scope, err
		}
		defer rows.Close()
		for rows.Next() {
			var e Entry
			var seq uint64
			var n, at int64
			if err := rows.Scan(&seq, &n, &e.By, &e.Field, &e.Old, &e.New, &at); err != nil {
				return scope, err
			}
			e.Position, e.At = s.replica.Position(seq).Token(), time.Unix(0, at).UTC()
			out.Changes, seqs, ns = append(out.Changes, e), append(seqs, seq), append(ns, n)
		}
		return scope, rows.Err()
	})
	if len(out.Changes) > limit {
		out.Changes = out.Changes[:limit]
		out.NextCursor = base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "h%d.%d", seqs[limit-1], ns[limit-1]))
	}
	out.ReadInfo = info
	return out, err
}

// historyCursor decodes a history cursor; none starts at the newest.
func historyCursor(cursor string) (seq uint64, n int64, err error) {
	if cursor == "" {
		return 1<<63 - 1, 0, nil
	}
	raw, derr := base64.RawURLEncoding.DecodeString(cursor)
	if _, serr := fmt.Sscanf(string(raw), "h%d.%d", &seq, &n); derr != nil || serr != nil {
		return 0, 0, invalid("cursor %q is not one a previous page of list_work_item_history returned; start again without it.", cursor)
	}
	return seq, n, nil
}
