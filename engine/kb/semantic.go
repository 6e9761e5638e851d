package kb

import (
	"context"
	"database/sql"
	"math"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// The knowledge base is a semantic.Corpus (its pages are embedded by the
// vectors domain's duty) and a semantic.Searcher (search_knowledge ranks
// with the vectors once engine/node links an Index).
var (
	_ semantic.Corpus   = (*Service)(nil)
	_ semantic.Searcher = (*Service)(nil)
)

// Rankings an answer names.
const (
	RankingHybrid = "hybrid"
	RankingBM25   = "bm25"
)

type indexHolder struct{ ix semantic.Index }

// UseIndex links the vectors' index.
func (s *Service) UseIndex(ix semantic.Index) { s.sem.Store(indexHolder{ix}) }

func (s *Service) semanticIndex() semantic.Index {
	if h, _ := s.sem.Load().(indexHolder); h.ix != nil {
		return h.ix
	}
	return nil
}

// Kinds are pages.
func (s *Service) Kinds() []semantic.Kind { return []semantic.Kind{semantic.Page} }

// Sources reads the pages whose own record moved after since (every page
// for 0), trashed ones included.
func (s *Service) Sources(ctx context.Context, since uint64, fn func(semantic.Source) error) (uint64, error) {
	opts, err := s.replica.AtLogEnd(ctx)
	if err != nil {
		return 0, err
	}
	info, err := s.replica.Read(ctx, opts, func(ctx context.Context, tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, title, body FROM kb_pages WHERE version > ?1 OR ?1 = 0`, since)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, title, body string
			if err := rows.Scan(&id, &title, &body); err != nil {
				return err
			}
			if err := fn(semantic.Source{ID: id, Kind: semantic.Page, Text: semantic.Text(title, body)}); err != nil {
				return err
			}
		}
		return rows.Err()
	})
	return info.SeenThrough.Seq, err
}

// Live lists every page's id.
func (s *Service) Live(ctx context.Context, fn func(id string) error) error {
	opts, err := s.replica.AtLogEnd(ctx)
	if err != nil {
		return err
	}
	_, err = s.replica.Read(ctx, opts, func(ctx context.Context, tx *sql.Tx) error {
		ids, err := sqlite.Strings(ctx, tx, `SELECT id FROM kb_pages`)
		if err != nil {
			return err
		}
		for _, id := range ids {
			if err := fn(id); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// nearestPages asks the linked index (nil: none) for the k pages nearest
// to query.
func (s *Service) nearestPages(ctx context.Context, query string, k int) (semantic.Index, []semantic.Hit, error) {
	ix := s.semanticIndex()
	if ix == nil {
		return nil, nil, nil
	}
	hits, err := ix.Nearest(ctx, query, []semantic.Kind{semantic.Page}, k)
	return ix, hits, err
}

// pageCoverage counts the pages this node holds against those with a
// vector.
func pageCoverage(ctx context.Context, tx *sql.Tx, ix semantic.Index) (*semantic.Coverage, error) {
	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM kb_pages`).Scan(&total); err != nil {
		return nil, err
	}
	if ix == nil {
		return semantic.NewCoverage(0, total, ""), nil
	}
	return semantic.NewCoverage(ix.Embedded(semantic.Page), total, ix.Model()), nil
}

// vectorPages reads the pages of the vector hits a search may answer (not
// trashed, in the space where one is given, existing when the first page
// was read), in the hits' order, each with its similarity.
func vectorPages(ctx context.Context, tx *sql.Tx, hits []semantic.Hit, space string, maxN int64) ([]Hit, error) {
	if len(hits) == 0 {
		return nil, nil
	}
	args := []any{space, maxN}
	marks := make([]string, 0, len(hits))
	for i, h := range hits {
		args = append(args, h.ID)
		marks = append(marks, "?"+strconv.Itoa(i+3))
	}
	rows, err := tx.QueryContext(ctx, `SELECT p.id, p.space, p.parent, p.title, p.version, p.body FROM kb_pages p
		WHERE p.id IN (`+strings.Join(marks, ",")+`) AND (?1 = '' OR p.space = ?1) AND p.n <= ?2 AND p.id NOT IN (SELECT id FROM kb_trash)`, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	byID := map[string]Hit{}
	for rows.Next() {
		var h Hit
		var body string
		if err := rows.Scan(&h.ID, &h.Space, &h.Parent, &h.Title, &h.Version, &body); err != nil {
			return nil, err
		}
		h.Snippet = semantic.LeadSnippet(h.Title, body)
		byID[h.ID] = h
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	var out []Hit
	for _, vh := range hits {
		if h, ok := byID[vh.ID]; ok {
			sim := semantic.Round4(vh.Similarity)
			h.Similarity = &sim
			out = append(out, h)
		}
	}
	return out, nil
}

// fuseVectorPages reads the vector hits' pages and fuses them with the
// word hits.
func fuseVectorPages(ctx context.Context, tx *sql.Tx, words []Hit, vhits []semantic.Hit, space string, maxN int64) ([]Hit, error) {
	vp, err := vectorPages(ctx, tx, vhits, space, maxN)
	if err != nil {
		return nil, err
	}
	return fusePages(words, vp), nil
}

// fusePages ranks the word hits and the vector hits by reciprocal rank
// fusion, each page once with both lists' figures.
func fusePages(words, vectors []Hit) []Hit {
	byID := map[string]Hit{}
	var wl, vl []string
	for _, h := range words {
		byID[h.ID] = h
		wl = append(wl, h.ID)
	}
	for _, h := range vectors {
		if w, ok := byID[h.ID]; ok {
			w.Similarity = h.Similarity
			byID[h.ID] = w
		} else {
			byID[h.ID] = h
		}
		vl = append(vl, h.ID)
	}
	out := []Hit{}
	for _, f := range semantic.Fuse(wl, vl) {
		h := byID[f.ID]
		h.Score = math.Round(f.Score*1e6) / 1e6
		out = append(out, h)
	}
	return out
}

// vectorsNote is added to an answer whose vector side failed.
func vectorsNote(err error) string {
	return " Vector ranking was unavailable for this answer (" + err.Error() + "): it is ranked by its words alone."
}
