package kb

import (
	"context"
	"database/sql"
	"strings"
	"unicode"

	"github.com/crewlet/crewlet/engine"
)

// SearchNote is the sentence every search answer carries: the Read
// Consistency page's "what the floor does not reach".
const SearchNote = "Ranked search carries no read-your-writes floor: it reads the index this node builds behind its own rows, which no log position describes, so a page written a moment ago may not be found yet. get_page finds it by id, list_pages by its space."

// matchQuery turns user text into an FTS5 query that can only mean "these
// words": every word becomes a quoted phrase (a double quote inside is
// doubled), so nothing in it is parsed as a column, an operator or syntax
// (node-3 would otherwise be column "node" minus 3). A word ending in *
// keeps it outside the quotes, as a prefix match. Words with no letter or
// digit carry no token and are dropped. The phrases are ANDed.
func matchQuery(q string) []string {
	var phrases []string
	for _, w := range strings.Fields(q) {
		prefix := false
		if strings.HasSuffix(w, "*") {
			w = strings.TrimRight(w, "*")
			prefix = true
		}
		if !strings.ContainsFunc(w, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) {
			continue
		}
		ph := `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
		if prefix {
			ph += "*"
		}
		phrases = append(phrases, ph)
	}
	return phrases
}

// The search: bm25 with a title weighted ten times a body, and every page
// whose title holds all the words ranked before the rest (title_match),
// whatever bm25 says of the bodies. The title query is the same phrases
// under the column filter; SQLite runs that uncorrelated subquery once.
const searchSQL = `SELECT p.id, p.space, p.parent, p.title,
	snippet(kb_pages_fts, -1, '**', '**', '…', 16),
	p.n IN (SELECT rowid FROM kb_pages_fts WHERE kb_pages_fts MATCH ?2) AS title_match,
	bm25(kb_pages_fts, 10.0, 1.0) AS score, p.version
	FROM kb_pages_fts JOIN kb_pages p ON p.n = kb_pages_fts.rowid
	WHERE kb_pages_fts MATCH ?1 AND (?3 = '' OR p.space = ?3)
	ORDER BY title_match DESC, score, p.n LIMIT ?4`

// SearchKnowledge finds pages by words in their titles and bodies, best
// first, with a snippet around the match. The answer is served at the
// level asked and carries no read-your-writes floor: a MinPosition (a
// seat's floor) is not waited for, and the answer's note says so.
func (s *Service) SearchKnowledge(ctx context.Context, r engine.ReadOptions, q SearchQuery) (SearchResult, error) {
	if err := checkText("query", q.Query, MaxQueryBytes, true); err != nil {
		return SearchResult{}, err
	}
	phrases := matchQuery(q.Query)
	if len(phrases) == 0 {
		return SearchResult{}, invalid("query %q holds no word to search for (letters or digits); give one or more words.", q.Query)
	}
	if q.Space != "" {
		if err := checkSpaceKey("space", q.Space); err != nil {
			return SearchResult{}, err
		}
	}
	if q.Limit == 0 {
		q.Limit = DefaultSearchLimit
	}
	if q.Limit < 0 || q.Limit > MaxSearchLimit {
		return SearchResult{}, invalid("limit %d is out of range; give 1 to %d.", q.Limit, MaxSearchLimit)
	}
	all := strings.Join(phrases, " ")
	title := "title : (" + all + ")"
	r = linearizable(r)
	r.MinPosition = nil
	out := SearchResult{Hits: []Hit{}}
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		if q.Space != "" {
			if _, err := getSpace(ctx, tx, q.Space); err == sql.ErrNoRows {
				return notFoundSpace(q.Space)
			} else if err != nil {
				return err
			}
		}
		rows, err := tx.QueryContext(ctx, searchSQL, all, title, q.Space, q.Limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var h Hit
			if err := rows.Scan(&h.ID, &h.Space, &h.Parent, &h.Title, &h.Snippet, &h.TitleMatch, &h.Score, &h.Version); err != nil {
				return err
			}
			out.Hits = append(out.Hits, h)
		}
		return rows.Err()
	})
	info.Note = SearchNote
	out.ReadInfo = info
	return out, err
}
