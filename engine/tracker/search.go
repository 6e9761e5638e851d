package tracker

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"unicode"

	"github.com/crewlet/crewlet/engine"
)

// Search limits.
const (
	MaxQueryBytes      = 512
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
)

// searchNote is what every search answer says it does not promise.
const searchNote = "search carries no read-your-writes floor: it reads this node's index as applied, so a write just made may not be found yet; get_work_item reads an item at linearizable."

// Column weights of bm25: a match in the title outranks one in the
// description, which outranks one in a comment.
const bm25Weights = "10.0, 3.0, 1.0"

// ftsQuery turns user text into an FTS5 query that cannot be an FTS5
// expression: every word becomes a quoted string (a double quote inside is
// doubled), so node-3, AND, NEAR(, * or a stray quote are searched for as
// text. Words are ANDed.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool { return unicode.IsSpace(r) })
	quoted := make([]string, 0, len(words))
	for _, w := range words {
		quoted = append(quoted, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	return strings.Join(quoted, " ")
}

// SearchWorkItems is the first page of SearchWorkItemsPage.
func (s *Service) SearchWorkItems(ctx context.Context, r engine.ReadOptions, query, project string, limit int) (SearchResult, error) {
	return s.SearchWorkItemsPage(ctx, r, SearchQuery{Query: query, Project: project, Limit: limit})
}

// SearchWorkItemsPage finds items by the words of the query in their
// titles, descriptions and comments, best first (bm25, title matches
// ranked first), each with a snippet, a page at a time (cursor.go: the
// next page is keyed on the score and the item, floored at the first
// page's position); items in the trash are left out. The index is written
// by the apply in the same transaction as the rows, and the answer says it
// carries no read-your-writes floor.
func (s *Service) SearchWorkItemsPage(ctx context.Context, r engine.ReadOptions, sq SearchQuery) (SearchResult, error) {
	if err := checkSearch(&sq); err != nil {
		return SearchResult{}, err
	}
	digest := queryDigest("search", sq.Query, sq.Project)
	cur, err := decodeCursor(sq.Cursor, digest)
	if err != nil {
		return SearchResult{}, err
	}
	if r.Level == "" {
		r.Level = engine.ConsistentPrefix
	}
	if r, err = cur.floor(r); err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Hits: []SearchHit{}}
	var docs []int64
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		out.Hits, docs, err = searchPage(ctx, tx, sq, cur)
		return err
	})
	if err == nil && len(out.Hits) > sq.Limit {
		out.Hits = out.Hits[:sq.Limit]
		last := out.Hits[sq.Limit-1]
		out.NextCursor = pageCursor{V: 1, Q: digest, P: cur.firstPosition(info),
			S: strconv.FormatFloat(-last.Score, 'g', -1, 64), K: strconv.FormatInt(docs[sq.Limit-1], 10)}.encode()
	}
	info.Note = searchNote
	out.ReadInfo = info
	return out, err
}

func checkSearch(sq *SearchQuery) error {
	if err := checkText("query", sq.Query, MaxQueryBytes, true); err != nil {
		return err
	}
	if sq.Project != "" && !projectKeyRE.MatchString(sq.Project) {
		return invalid("project %q is not a project key (e.g. ENG).", sq.Project)
	}
	if sq.Limit == 0 {
		sq.Limit = DefaultSearchLimit
	}
	if sq.Limit < 0 || sq.Limit > MaxSearchLimit {
		return invalid("limit %d is out of range; give 1 to %d.", sq.Limit, MaxSearchLimit)
	}
	return nil
}

// searchPage reads one page of hits (and one past it) in (rank, doc)
// order, after the cursor's last one.
func searchPage(ctx context.Context, tx *sql.Tx, sq SearchQuery, cur pageCursor) ([]SearchHit, []int64, error) {
	inner := `SELECT i.key, i.title, i.status, snippet(tracker_search, -1, '[', ']', '…', 12) AS snip, bm25(tracker_search, ` + bm25Weights + `) AS rank, i.doc AS doc
		FROM tracker_search JOIN tracker_items i ON i.doc = tracker_search.rowid
		WHERE tracker_search MATCH ? AND i.trashed = 0`
	args := []any{ftsQuery(sq.Query)}
	if sq.Project != "" {
		inner += ` AND i.project = ?`
		args = append(args, sq.Project)
	}
	q := `SELECT key, title, status, snip, rank, doc FROM (` + inner + `)`
	if cur.K != "" {
		rank, err1 := strconv.ParseFloat(cur.S, 64)
		doc, err2 := strconv.ParseInt(cur.K, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, nil, invalid("that cursor is not one a previous page returned; start again without it.")
		}
		q += ` WHERE (rank, doc) > (?, ?)`
		args = append(args, rank, doc)
	}
	q += ` ORDER BY rank, doc LIMIT ?`
	args = append(args, sq.Limit+1)
	rows, err := tx.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	var hits []SearchHit
	var docs []int64
	for rows.Next() {
		var h SearchHit
		var doc int64
		if err := rows.Scan(&h.Key, &h.Title, &h.Status, &h.Snippet, &h.Score, &doc); err != nil {
			return nil, nil, err
		}
		h.Score = -h.Score // bm25 is lower-is-better; answer higher-is-better
		hits = append(hits, h)
		docs = append(docs, doc)
	}
	return hits, docs, rows.Err()
}
