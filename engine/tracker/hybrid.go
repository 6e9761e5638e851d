package tracker

import (
	"context"
	"database/sql"
	"math"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Rankings an answer names.
const (
	RankingHybrid = "hybrid"
	RankingBM25   = "bm25"
)

// MaxHybridDepth bounds how deep hybrid search pages: the fused ranking
// is computed afresh for each page, over the best this many of each list.
const MaxHybridDepth = 500

// vectorsNote is added to an answer whose vector side could not be used.
const vectorsNote = " Vector ranking was unavailable for this answer (%s): it is ranked by its words alone."

// candidate is one item of a hybrid ranking, with what each list said.
type candidate struct {
	doc        int64
	id         string
	hit        SearchHit
	bm25       *float64
	similarity *float64
}

// vectorCandidates asks the index for the items (and, with comments, the
// items of the comments) nearest to text: each item once, at its best
// similarity, best first.
func vectorCandidates(ctx context.Context, ix semantic.Index, text string, kinds []semantic.Kind, k int) ([]semantic.Hit, error) {
	hits, err := ix.Nearest(ctx, text, kinds, k)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	out := hits[:0]
	for _, h := range hits {
		if h.Kind == semantic.Comment {
			h.ID, h.Kind = h.Owner, semantic.WorkItem
		}
		if h.ID == "" || seen[h.ID] {
			continue
		}
		seen[h.ID] = true
		out = append(out, h)
	}
	return out, nil
}

// itemRowsByID reads the rows of the vector candidates that a search may
// answer (not trashed; in the project, where one is given), in the
// candidates' order.
func itemRowsByID(ctx context.Context, q statelog.Reader, hits []semantic.Hit, project string, exclude string) ([]candidate, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	args := make([]any, 0, len(hits)+1)
	marks := make([]string, 0, len(hits))
	for _, h := range hits {
		args = append(args, h.ID)
		marks = append(marks, "?")
	}
	query := `SELECT id, doc, key, title, status, description FROM tracker_items WHERE trashed = 0 AND id IN (` + strings.Join(marks, ",") + `)`
	if project != "" {
		query += ` AND project = ?`
		args = append(args, project)
	}
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[string]candidate{}
	for rows.Next() {
		var c candidate
		var desc string
		if err := rows.Scan(&c.id, &c.doc, &c.hit.Key, &c.hit.Title, &c.hit.Status, &desc); err != nil {
			return nil, err
		}
		c.hit.Snippet = semantic.LeadSnippet(c.hit.Title, desc)
		byID[c.id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []candidate
	for _, h := range hits {
		if c, ok := byID[h.ID]; ok && h.ID != exclude {
			sim := semantic.Round4(h.Similarity)
			c.similarity = &sim
			out = append(out, c)
		}
	}
	return out, nil
}

// fuseCandidates ranks the word list and the vector list by reciprocal
// rank fusion: each candidate once, with both lists' figures, its score
// the fused one.
func fuseCandidates(words, vectors []candidate) []candidate {
	byDoc := map[int64]candidate{}
	var wl, vl []string
	for _, c := range words {
		byDoc[c.doc] = c
		wl = append(wl, strconv.FormatInt(c.doc, 10))
	}
	for _, c := range vectors {
		if w, ok := byDoc[c.doc]; ok {
			w.similarity = c.similarity
			byDoc[c.doc] = w
		} else {
			byDoc[c.doc] = c
		}
		vl = append(vl, strconv.FormatInt(c.doc, 10))
	}
	var out []candidate
	for _, f := range semantic.Fuse(wl, vl) {
		doc, _ := strconv.ParseInt(f.ID, 10, 64)
		c := byDoc[doc]
		c.hit.Score = math.Round(f.Score*1e6) / 1e6
		c.hit.BM25, c.hit.Similarity = c.bm25, c.similarity
		out = append(out, c)
	}
	return out
}

// wordCandidates are a bm25 page's hits as candidates.
func wordCandidates(hits []SearchHit, docs []int64) []candidate {
	out := make([]candidate, 0, len(hits))
	for i, h := range hits {
		b := semantic.Round4(h.Score)
		out = append(out, candidate{doc: docs[i], hit: h, bm25: &b})
	}
	return out
}

// coverage counts the items this node holds against those with a vector.
func coverage(ctx context.Context, q statelog.Reader, ix semantic.Index) (*semantic.Coverage, error) {
	var total int
	if err := q.QueryRowContext(ctx, `SELECT count(*) FROM tracker_items`).Scan(&total); err != nil {
		return nil, err
	}
	if ix == nil {
		return semantic.NewCoverage(0, total, ""), nil
	}
	return semantic.NewCoverage(ix.Embedded(semantic.WorkItem), total, ix.Model()), nil
}

// hybridSearch is search_work_items over a linked index: the bm25 ranking
// and the vector ranking (items by their own vector or their comments')
// fused, a page at a time by offset.
func (s *Service) hybridSearch(ctx context.Context, r engine.ReadOptions, sq SearchQuery, ix semantic.Index) (SearchResult, error) {
	digest := queryDigest("search-hybrid", sq.Query, sq.Project)
	cur, err := decodeCursor(sq.Cursor, digest)
	if err != nil {
		return SearchResult{}, err
	}
	offset := 0
	if cur.K != "" {
		if offset, err = strconv.Atoi(cur.K); err != nil || cur.S != "rrf" || offset < 0 {
			return SearchResult{}, invalid("that cursor is not one a previous page returned; start again without it.")
		}
	}
	depth := offset + sq.Limit + 1
	if depth > MaxHybridDepth+1 {
		return SearchResult{}, invalid("the cursor is %d hits deep, past the %d search_work_items pages to; narrow the query with more words or a project.", offset, MaxHybridDepth)
	}
	if r.Level == "" {
		r.Level = engine.ConsistentPrefix
	}
	if r, err = cur.floor(r); err != nil {
		return SearchResult{}, err
	}
	out := SearchResult{Hits: []SearchHit{}, Ranking: RankingHybrid}
	vhits, verr := vectorCandidates(ctx, ix, sq.Query, []semantic.Kind{semantic.WorkItem, semantic.Comment}, depth+candidateSlack)
	var fused []candidate
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		q := s.replica.Prepared(tx)
		hits, docs, err := searchPage(ctx, q, SearchQuery{Query: sq.Query, Project: sq.Project, Limit: depth}, pageCursor{})
		if err != nil {
			return err
		}
		vc, err := itemRowsByID(ctx, q, vhits, sq.Project, "")
		if err != nil {
			return err
		}
		fused = fuseCandidates(wordCandidates(hits, docs), vc)
		out.Coverage, err = coverage(ctx, q, ix)
		return err
	})
	info.Note = searchNote
	if verr != nil {
		out.Ranking = RankingBM25
		info.Note += strings.ReplaceAll(vectorsNote, "%s", verr.Error())
	}
	out.ReadInfo = info
	if err != nil {
		return out, err
	}
	for _, c := range fused[min(offset, len(fused)):min(offset+sq.Limit, len(fused))] {
		out.Hits = append(out.Hits, c.hit)
	}
	if len(fused) > offset+sq.Limit {
		out.NextCursor = pageCursor{V: 1, Q: digest, P: cur.firstPosition(info), S: "rrf", K: strconv.Itoa(offset + sq.Limit)}.encode()
	}
	return out, nil
}
