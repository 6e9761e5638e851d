package kb

import (
	"context"
	"database/sql"
	"math"
	"slices"
	"strconv"
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

// The search ranks every page whose title holds all the words before the
// rest (title_match), whatever bm25 says of the bodies. It runs in up to
// three steps, so a common word costs no more than the bare MATCH it
// stands on:
//
//  1. the best title matches, up to the limit, from the titles' own index
//     (whose postings are a small fraction of the bodies'), ranked by the
//     title's bm25;
//  2. only when they do not fill the limit, the best matches anywhere,
//     ranked by bm25 over the whole page with a title weighted ten times a
//     body, of which fewer than the limit are title matches already taken;
//  3. the snippet of each title match kept.
//
// Both rankings order by FTS5's own rank column, which the module sorts
// itself: SQLite then evaluates the selected columns — snippet() above
// all, which reads the row's text — for the rows the LIMIT keeps, not for
// every match. Score is the rank within the hit's group (lower is better);
// the two groups' scores are on different scales.
const (
	titleRankSQL = `SELECT f.rowid, f.rank FROM kb_titles_fts f
	WHERE kb_titles_fts MATCH ?1 AND f.rowid NOT IN (SELECT p.n FROM kb_trash t JOIN kb_pages p ON p.id = t.id) AND f.rowid <= ?4 ORDER BY f.rank LIMIT ?2`
	titleRankInSpaceSQL = `SELECT f.rowid, f.rank FROM kb_titles_fts f JOIN kb_pages p ON p.n = f.rowid
	WHERE kb_titles_fts MATCH ?1 AND p.space = ?3 AND p.id NOT IN (SELECT id FROM kb_trash) AND p.n <= ?4 ORDER BY f.rank LIMIT ?2`
	rankSQL = `SELECT f.rowid, f.rank, p.id, p.space, p.parent, p.title, p.version, snippet(kb_pages_fts, -1, '**', '**', '…', 16)
	FROM kb_pages_fts f JOIN kb_pages p ON p.n = f.rowid
	WHERE kb_pages_fts MATCH ?1 AND f.rank MATCH 'bm25(10.0, 1.0)' AND (?3 = '' OR p.space = ?3) AND p.id NOT IN (SELECT id FROM kb_trash) AND p.n <= ?4 ORDER BY f.rank LIMIT ?2`
	titleHitSQL = `SELECT p.id, p.space, p.parent, p.title, p.version, snippet(kb_pages_fts, -1, '**', '**', '…', 16)
	FROM kb_pages_fts JOIN kb_pages p ON p.n = kb_pages_fts.rowid WHERE kb_pages_fts MATCH ?1 AND kb_pages_fts.rowid = ?2`
)

type ranked struct {
	n     int64
	score float64
}

func titleRank(ctx context.Context, tx *sql.Tx, match, space string, limit int, maxN int64) ([]ranked, error) {
	q := titleRankSQL
	if space != "" {
		q = titleRankInSpaceSQL
	}
	rows, err := tx.QueryContext(ctx, q, match, limit, space, maxN)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ranked
	for rows.Next() {
		var r ranked
		if err := rows.Scan(&r.n, &r.score); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// SearchKnowledge finds pages by words in their titles and bodies, best
// first, with a snippet around the match; where the vectors' index is
// linked, that ranking is fused with the pages' vector similarity to the
// query (semantic.go), which finds a page by its meaning too. The answer is served at the
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
	if err := checkLimit(&q.Limit, DefaultSearchLimit, MaxSearchLimit); err != nil {
		return SearchResult{}, err
	}
	pg, err := openCursor(q.Cursor, fingerprint("search_knowledge", q.Query, q.Space))
	if err != nil {
		return SearchResult{}, err
	}
	offset, err := pg.afterInt()
	if err != nil {
		return SearchResult{}, err
	}
	if offset > MaxSearchOffset {
		return SearchResult{}, invalid("the cursor is %d hits deep, past the %d search_knowledge pages to; narrow the query with more words or a space.", offset, MaxSearchOffset)
	}
	all := strings.Join(phrases, " ")
	// A seat's floor is not waited for (the note says why); a later
	// page's is, since the first page was read at it.
	r.MinPosition = nil
	r = pg.floor(r)
	// Later pages rank only the pages that existed when the first was
	// read (a page's n is the sequence that created it): one created
	// between two pages neither shows up in the middle nor shifts the
	// offset of the rest.
	maxN := int64(math.MaxInt64)
	if pg.at != nil {
		maxN = int64(pg.at.Seq)
	}
	page, want := q.Limit, int(offset)+q.Limit+1
	q.Limit = want
	out := SearchResult{Hits: []Hit{}, Ranking: RankingBM25}
	// The vector side is asked before the read: its query may be
	// embedded by a provider over HTTP.
	ix, vhits, verr := s.nearestPages(ctx, q.Query, 2*want+16)
	if ix != nil && verr == nil {
		out.Ranking = RankingHybrid
	}
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		if out.Hits, err = s.rank(ctx, tx, all, q.Space, q.Limit, maxN); err != nil {
			return err
		}
		if out.Ranking == RankingHybrid {
			if out.Hits, err = fuseVectorPages(ctx, tx, out.Hits, vhits, q.Space, maxN); err != nil {
				return err
			}
		}
		out.Coverage, err = pageCoverage(ctx, tx, ix)
		return err
	})
	info.Note = SearchNote
	if verr != nil {
		info.Note += vectorsNote(verr)
	}
	out.ReadInfo = info
	if err != nil {
		return out, err
	}
	// The page is a slice of the ranking read now; the cursor carries
	// where it ended as an offset (a ranking has no key an insert cannot
	// move: bm25 scores change with the corpus, and so does a fusion).
	more := len(out.Hits) >= want
	out.Hits = out.Hits[min(int(offset), len(out.Hits)):min(int(offset)+page, len(out.Hits))]
	if more {
		out.NextCursor = pg.next(info, strconv.Itoa(int(offset)+page))
	}
	return out, nil
}

// rank reads the best limit hits for the match, title matches first.
func (s *Service) rank(ctx context.Context, tx *sql.Tx, all, space string, limit int, maxN int64) ([]Hit, error) {
	hits := []Hit{}
	if space != "" {
		if _, err := getSpace(ctx, tx, space); err == sql.ErrNoRows {
			return nil, notFoundSpace(space)
		} else if err != nil {
			return nil, err
		}
	}
	titles, err := titleRank(ctx, tx, all, space, limit, maxN)
	if err != nil {
		return nil, err
	}
	for _, r := range titles {
		h := Hit{TitleMatch: true, Score: r.score}
		if err := s.replica.Prepared(tx).QueryRowContext(ctx, titleHitSQL, all, r.n).Scan(&h.ID, &h.Space, &h.Parent, &h.Title, &h.Version, &h.Snippet); err != nil {
			return nil, err
		}
		hits = append(hits, h)
	}
	if len(titles) == limit {
		return hits, nil
	}
	rows, err := tx.QueryContext(ctx, rankSQL, all, limit+len(titles), space, maxN)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() && len(hits) < limit {
		var n int64
		var h Hit
		if err := rows.Scan(&n, &h.Score, &h.ID, &h.Space, &h.Parent, &h.Title, &h.Version, &h.Snippet); err != nil {
			return nil, err
		}
		if !slices.ContainsFunc(titles, func(r ranked) bool { return r.n == n }) {
			hits = append(hits, h)
		}
	}
	return hits, rows.Err()
}
