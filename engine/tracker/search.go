package tracker

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"unicode"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
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
// ranked first; fused with vector similarity where the vectors' index is
// linked: hybrid.go), each with a snippet, a page at a time (cursor.go: the
// next page is keyed on the score and the item, floored at the first
// page's position); items in the trash are left out. The index is written
// by the apply in the same transaction as the rows, and the answer says it
// carries no read-your-writes floor.
func (s *Service) SearchWorkItemsPage(ctx context.Context, r engine.ReadOptions, sq SearchQuery) (SearchResult, error) {
	if err := checkSearch(&sq); err != nil {
		return SearchResult{}, err
	}
	if ix := s.semanticIndex(); ix != nil {
		return s.hybridSearch(ctx, r, sq, ix)
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
	out := SearchResult{Hits: []SearchHit{}, Ranking: RankingBM25}
	var docs []int64
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		var err error
		q := s.replica.Prepared(tx)
		if out.Hits, docs, err = searchPage(ctx, q, sq, cur); err != nil {
			return err
		}
		out.Coverage, err = coverage(ctx, q, nil)
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
//
// Ranking is the index's own work; joining every match to its item to
// drop the trashed ones (and, with a project, the other projects') was
// two B-tree seeks a match — three quarters of a search at 100 000 items.
// So the page is first chosen from the index alone, a little past the
// page size, and only those candidates are joined, filtered and given a
// snippet. That is exact whenever enough candidates survive the filter:
// any item past the candidates ranks after all of them. When too few
// survive and the index held more, the page is read again with the join
// on every match.
func searchPage(ctx context.Context, q statelog.Reader, sq SearchQuery, cur pageCursor) ([]SearchHit, []int64, error) {
	args := []any{ftsQuery(sq.Query), sq.Project, 0.0, int64(0)}
	after := ""
	if cur.K != "" {
		rank, err1 := strconv.ParseFloat(cur.S, 64)
		doc, err2 := strconv.ParseInt(cur.K, 10, 64)
		if err1 != nil || err2 != nil {
			return nil, nil, invalid("that cursor is not one a previous page returned; start again without it.")
		}
		after = ` AND (rank, doc) > (?3, ?4)`
		args[2], args[3] = rank, doc
	}
	project := ""
	if sq.Project != "" {
		project = ` AND i.project = ?2`
	}
	// A statement takes as many arguments as its highest number.
	switch {
	case after != "":
	case project != "":
		args = args[:2]
	default:
		args = args[:1]
	}
	want := sq.Limit + 1
	if sq.Project == "" {
		hits, docs, candidates, err := searchRows(ctx, q, candidatesQuery(after, project, want), args)
		// No row at all says nothing of how many candidates there were.
		if err != nil || len(hits) >= want || (len(hits) > 0 && candidates < want+candidateSlack) {
			hits, docs = trimHits(hits, docs, want)
			return hits, docs, err
		}
	}
	hits, docs, _, err := searchRows(ctx, q, everyMatchQuery(after, project, want), args)
	return hits, docs, err
}

// candidateSlack is how many candidates past the page the index is asked
// for, so a few trashed items among them do not force the slow path.
const candidateSlack = 16

// candidatesQuery ranks on the index alone, then joins the candidates,
// keeps the page's rows and takes their snippets (not in the ranking
// pass: there SQLite computed one for every match; and not for the
// candidates past the page: each is the query matched again). The
// limits are written into the text: they are 1 to 101 (plus the slack),
// so the texts stay few.
func candidatesQuery(after, project string, want int) string {
	return `WITH top AS MATERIALIZED (SELECT doc, rank FROM (SELECT rowid AS doc, bm25(tracker_search, ` + bm25Weights + `) AS rank
		FROM tracker_search WHERE tracker_search MATCH ?1) WHERE 1` + after + ` ORDER BY rank, doc LIMIT ` + strconv.Itoa(want+candidateSlack) + `),
		page AS MATERIALIZED (SELECT i.key AS key, i.title AS title, i.status AS status, top.rank AS rank, top.doc AS doc
		FROM top JOIN tracker_items i ON i.doc = top.doc WHERE i.trashed = 0` + project + ` ORDER BY top.rank, top.doc LIMIT ` + strconv.Itoa(want) + `),
		` + snippetsCTE + `
		SELECT page.key, page.title, page.status, snips.snip, page.rank, page.doc, (SELECT count(*) FROM top)
		FROM page JOIN snips ON snips.doc = page.doc ORDER BY page.rank, page.doc`
}

// everyMatchQuery joins every match before it ranks.
func everyMatchQuery(after, project string, limit int) string {
	return `WITH page AS MATERIALIZED (SELECT doc, rank FROM (SELECT tracker_search.rowid AS doc, bm25(tracker_search, ` + bm25Weights + `) AS rank
		FROM tracker_search JOIN tracker_items i ON i.doc = tracker_search.rowid
		WHERE tracker_search MATCH ?1 AND i.trashed = 0` + project + `) WHERE 1` + after + ` ORDER BY rank, doc LIMIT ` + strconv.Itoa(limit) + `),
		` + snippetsCTE + `
		SELECT i.key, i.title, i.status, snips.snip, page.rank, page.doc, 0
		FROM page JOIN tracker_items i ON i.doc = page.doc JOIN snips ON snips.doc = page.doc
		ORDER BY page.rank, page.doc`
}

// snippetsCTE takes the snippets of the page's docs in one pass of the
// index. Joined by rowid instead, SQLite opened the MATCH again for each
// row: each opening seeks the term in every segment of the index, and
// the statement FTS5 seeks with was parsed again nearly every time
// (SQLite 3.54 re-plans a "segid = ?" lookup when the bound value was 0
// or 1, and the index's first segment is numbered 1; the driver offers
// no way to set SQLITE_DBCONFIG_ENABLE_QPSG, which would stop it) — a
// quarter of a search. One pass over the matching rowids costs less than
// two openings; the unary plus keeps the IN a filter, not a lookup per
// doc, and snippet() runs only for the rows it keeps.
const snippetsCTE = `snips AS MATERIALIZED (SELECT rowid AS doc, snippet(tracker_search, -1, '[', ']', '…', 12) AS snip
		FROM tracker_search WHERE tracker_search MATCH ?1 AND +rowid IN (SELECT doc FROM page))`

func trimHits(hits []SearchHit, docs []int64, n int) ([]SearchHit, []int64) {
	if len(hits) > n {
		return hits[:n], docs[:n]
	}
	return hits, docs
}

// searchRows runs one of the two queries: the hits, their docs and how
// many candidates the index gave.
func searchRows(ctx context.Context, q statelog.Reader, query string, args []any) ([]SearchHit, []int64, int, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, nil, 0, err
	}
	defer rows.Close()
	// Never nil: an empty page answers "hits": [] (the dashboard maps it).
	hits := []SearchHit{}
	var docs []int64
	candidates := 0
	for rows.Next() {
		var h SearchHit
		var doc int64
		if err := rows.Scan(&h.Key, &h.Title, &h.Status, &h.Snippet, &h.Score, &doc, &candidates); err != nil {
			return nil, nil, 0, err
		}
		h.Score = -h.Score // bm25 is lower-is-better; answer higher-is-better
		hits = append(hits, h)
		docs = append(docs, doc)
	}
	return hits, docs, candidates, rows.Err()
}
