package tracker

import (
	"cmp"
	"database/sql"
	"slices"
	"strconv"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
)

// get_work_item's answer in one statement: the checkpoint, the item with
// its sets, and its newest comments as a JSON array, so a stale read is
// one prepared step with no transaction around it (see
// statelog.ReadObjectRow). getWorkItemTx answers the same in a read
// transaction; TestGetWorkItemOneStatement holds the two equal.

// commentsJSON is an item's newest MaxReadComments comments as a JSON
// array of objects (commentJSON), over the item row i, in no promised
// order: scanItemRead puts them oldest first.
var commentsJSON = `(SELECT json_group_array(json_object('i', id, 'v', version, 'a', author, 'b', body, 't', at)) FROM (
	SELECT c.seq AS id, coalesce(v.version, c.seq) AS version, c.author AS author, c.body AS body, c.at AS at
	FROM tracker_comments c LEFT JOIN tracker_comment_versions v ON v.item = c.item AND v.seq = c.seq
	WHERE c.item = i.id ORDER BY c.seq DESC LIMIT ` + strconv.Itoa(MaxReadComments) + `))`

// getItemQuery reads get_work_item's answer by any key the item has held:
// the checkpoint, loadItemQuery's columns, the comments in the sets.
var getItemQuery = `SELECT ` + statelog.SeenColumn(engine.DomainTracker) + ` AS seen, ` + itemColumns +
	`, '{"t":' || ` + tagsJSON + ` || ',"w":' || ` + watchersJSON + ` || ',"e":' || ` + edgesJSON + ` || ',"c":' || ` + commentsJSON + ` || '}' AS sets` + itemFrom + ` WHERE i.id = (SELECT id FROM tracker_item_keys WHERE key = ?)`

// commentJSON is one element of commentsJSON's array (integers decode
// exactly into int64, never through a float).
type commentJSON struct {
	ID      uint64 `json:"i"`
	Version uint64 `json:"v"`
	Author  string `json:"a"`
	Body    string `json:"b"`
	At      int64  `json:"t"`
}

// scanItemRead scans getItemQuery's row: seen and the answer.
func scanItemRead(row *sql.Row, seen *uint64) (ItemRead, error) {
	var x itemScan
	out := ItemRead{Comments: []Comment{}}
	if err := row.Scan(x.appendDest(append(make([]any, 0, 1+itemDests), seen))...); err != nil {
		return out, err
	}
	it, sets, err := x.item()
	if err != nil {
		return out, err
	}
	out.Item = it
	if len(sets.Comments) > 0 {
		out.Comments = make([]Comment, 0, len(sets.Comments))
	}
	// Oldest first, put in order here: an ORDER BY inside the aggregate
	// made SQLite open and close a temporary b-tree (and its pager) on
	// every read, item without comments included.
	slices.SortFunc(sets.Comments, func(a, b commentJSON) int { return cmp.Compare(a.ID, b.ID) })
	for _, c := range sets.Comments {
		out.Comments = append(out.Comments, Comment{ID: c.ID, Version: c.Version, Author: c.Author, Body: c.Body, At: time.Unix(0, c.At).UTC()})
	}
	return out, nil
}
