package tracker

import (
	"context"
	"database/sql"
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

// SearchWorkItems finds items by the words of query in their titles,
// descriptions and comments, best first (bm25, title matches ranked
// first), each with a snippet; items in the trash are left out. The index
// is written by the apply in the same transaction as the rows, and the
// answer says it carries no read-your-writes floor.
func (s *Service) SearchWorkItems(ctx context.Context, r engine.ReadOptions, query, project string, limit int) (SearchResult, error) {
	if err := checkText("query", query, MaxQueryBytes, true); err != nil {
		return SearchResult{}, err
	}
	if project != "" && !projectKeyRE.MatchString(project) {
		return SearchResult{}, invalid("project %q is not a project key (e.g. ENG).", project)
	}
	if limit == 0 {
		limit = DefaultSearchLimit
	}
	if limit < 0 || limit > MaxSearchLimit {
		return SearchResult{}, invalid("limit %d is out of range; give 1 to %d.", limit, MaxSearchLimit)
	}
	if r.Level == "" {
		r.Level = engine.ConsistentPrefix
	}
	match := ftsQuery(query)
	out := SearchResult{Hits: []SearchHit{}}
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		q := `SELECT i.key, i.title, i.status, snippet(tracker_search, -1, '[', ']', '…', 12), bm25(tracker_search, ` + bm25Weights + `) AS rank
			FROM tracker_search JOIN tracker_items i ON i.doc = tracker_search.rowid
			WHERE tracker_search MATCH ? AND i.trashed = 0`
		args := []any{match}
		if project != "" {
			q += ` AND i.project = ?`
			args = append(args, project)
		}
		q += ` ORDER BY rank LIMIT ?`
		args = append(args, limit)
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h SearchHit
			if err := rows.Scan(&h.Key, &h.Title, &h.Status, &h.Snippet, &h.Score); err != nil {
				return err
			}
			h.Score = -h.Score // bm25 is lower-is-better; answer higher-is-better
			out.Hits = append(out.Hits, h)
		}
		return rows.Err()
	})
	info.Note = searchNote
	out.ReadInfo = info
	return out, err
}
