package tracker

import (
	"context"
	"database/sql"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Limits of similar_work_items.
const (
	DefaultSimilarLimit = 5
	MaxSimilarLimit     = 50
	// similarTerms bounds the words of the text its word ranking ORs.
	similarTerms = 48
)

// SimilarQuery is similar_work_items' input: the would-be item's title
// and description (before a create), or the key of an item to find the
// likely duplicates of; Project narrows the candidates to one project.
type SimilarQuery struct {
	Title, Description string
	Key                string
	Project            string
	Limit              int
}

// SimilarHit is a likely duplicate: Score is the fused rank score (higher
// first), Similarity the cosine similarity of the two items' vectors
// where the candidate has one, BM25 the word score where words matched.
type SimilarHit struct {
	Key        string   `json:"key"`
	Project    string   `json:"project"`
	Title      string   `json:"title"`
	Status     string   `json:"status"`
	Snippet    string   `json:"snippet"`
	Score      float64  `json:"score"`
	Similarity *float64 `json:"similarity,omitempty"`
	BM25       *float64 `json:"bm25,omitempty"`
}

// SimilarResult answers similar_work_items.
type SimilarResult struct {
	engine.ReadInfo
	// Of is the item the candidates are similar to, when asked by key.
	Of       string             `json:"of,omitempty"`
	Hits     []SimilarHit       `json:"hits"`
	Ranking  string             `json:"ranking"`
	Coverage *semantic.Coverage `json:"coverage"`
}

// similarNote is what every similar_work_items answer says.
const similarNote = "Likely duplicates, most similar first: done and cancelled items included (a duplicate of closed work is still one), trashed items left out. Judge each before merging or filing; search carries no read-your-writes floor."

func checkSimilar(q *SimilarQuery) error {
	if q.Key != "" {
		if err := checkItemKey(q.Key); err != nil {
			return err
		}
		if q.Title != "" || q.Description != "" {
			return invalid("give either key (an item to find the duplicates of) or title and description (an item about to be filed), not both.")
		}
	} else if err := checkText("title", q.Title, MaxTitleBytes, true); err != nil {
		return invalid("give title (and description) of the item about to be filed, or key of an item already filed.")
	}
	if err := checkText("description", q.Description, MaxDescriptionBytes, false); err != nil {
		return err
	}
	if q.Project != "" && !projectKeyRE.MatchString(q.Project) {
		return invalid("project %q is not a project key (e.g. ENG).", q.Project)
	}
	if q.Limit == 0 {
		q.Limit = DefaultSimilarLimit
	}
	if q.Limit < 0 || q.Limit > MaxSimilarLimit {
		return invalid("limit %d is out of range; give 1 to %d.", q.Limit, MaxSimilarLimit)
	}
	return nil
}

// orQuery is an FTS5 query matching any of the text's words (each
// quoted, so none is syntax), at most similarTerms of them, title first.
func orQuery(title, description string) string {
	seen := map[string]bool{}
	var terms []string
	for _, w := range append(embed.Words(title), embed.Words(description)...) {
		if len(terms) == similarTerms {
			break
		}
		if len(w) < 3 || seen[w] {
			continue
		}
		seen[w] = true
		terms = append(terms, `"`+strings.ReplaceAll(w, `"`, `""`)+`"`)
	}
	return strings.Join(terms, " OR ")
}

// similarWords ranks by the words any of which may match (bm25: title
// first, comments barely), best first, trashed items and exclude left out.
func similarWords(ctx context.Context, q statelog.Reader, match, project, exclude string, n int) ([]candidate, error) {
	if match == "" {
		return nil, nil
	}
	query := `WITH top AS MATERIALIZED (SELECT rowid AS doc, bm25(tracker_search, 10.0, 3.0, 0.2) AS rank FROM tracker_search
		WHERE tracker_search MATCH ?1 ORDER BY rank, doc LIMIT ` + strconv.Itoa(2*n+candidateSlack) + `)
		SELECT i.id, i.doc, i.key, i.title, i.status, i.description, top.rank FROM top JOIN tracker_items i ON i.doc = top.doc
		WHERE i.trashed = 0 AND i.id != ?2 AND (?3 = '' OR i.project = ?3) ORDER BY top.rank, top.doc LIMIT ` + strconv.Itoa(n)
	rows, err := q.QueryContext(ctx, query, match, exclude, project)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []candidate
	for rows.Next() {
		var c candidate
		var desc string
		var rank float64
		if err := rows.Scan(&c.id, &c.doc, &c.hit.Key, &c.hit.Title, &c.hit.Status, &desc, &rank); err != nil {
			return nil, err
		}
		c.hit.Snippet = semantic.LeadSnippet(c.hit.Title, desc)
		b := semantic.Round4(-rank)
		c.bm25 = &b
		out = append(out, c)
	}
	return out, rows.Err()
}

// SimilarWorkItems finds the likely duplicates of an item about to be
// filed (its title and description) or of one filed already (its key):
// the items whose words and whose vector are nearest, fused by
// reciprocal rank. Without vectors (none linked, or none yet) it ranks
// by words alone, and says so (ranking, coverage).
func (s *Service) SimilarWorkItems(ctx context.Context, r engine.ReadOptions, q SimilarQuery) (SimilarResult, error) {
	if err := checkSimilar(&q); err != nil {
		return SimilarResult{}, err
	}
	out := SimilarResult{Hits: []SimilarHit{}, Ranking: RankingBM25, Of: q.Key}
	exclude := ""
	if r.Level == "" {
		r.Level = engine.ConsistentPrefix
	}
	if q.Key != "" {
		item, err := s.GetWorkItem(ctx, r, q.Key)
		if err != nil {
			return SimilarResult{}, err
		}
		q.Title, q.Description, exclude, out.Of = item.Item.Title, item.Item.Description, item.Item.ID, item.Item.Key
	}
	depth := 4*q.Limit + candidateSlack
	ix := s.semanticIndex()
	var vhits []semantic.Hit
	var verr error
	if ix != nil {
		vhits, verr = vectorCandidates(ctx, ix, semantic.Text(q.Title, q.Description), []semantic.Kind{semantic.WorkItem}, depth+1)
		if verr == nil {
			out.Ranking = RankingHybrid
		}
	}
	var fused []candidate
	projects := map[int64]string{}
	info, err := s.replica.Read(ctx, r, func(ctx context.Context, tx *sql.Tx) error {
		p := s.replica.Prepared(tx)
		words, err := similarWords(ctx, p, orQuery(q.Title, q.Description), q.Project, exclude, depth)
		if err != nil {
			return err
		}
		vc, err := itemRowsByID(ctx, p, vhits, q.Project, exclude)
		if err != nil {
			return err
		}
		fused = fuseCandidates(words, vc)
		if len(fused) > q.Limit {
			fused = fused[:q.Limit]
		}
		for _, c := range fused {
			var project string
			if err := p.QueryRowContext(ctx, `SELECT project FROM tracker_items WHERE doc = ?`, c.doc).Scan(&project); err != nil {
				return err
			}
			projects[c.doc] = project
		}
		out.Coverage, err = coverage(ctx, p, ix)
		return err
	})
	info.Note = similarNote
	if verr != nil {
		info.Note += strings.ReplaceAll(vectorsNote, "%s", verr.Error())
	}
	out.ReadInfo = info
	for _, c := range fused {
		out.Hits = append(out.Hits, SimilarHit{Key: c.hit.Key, Project: projects[c.doc], Title: c.hit.Title, Status: c.hit.Status,
			Snippet: c.hit.Snippet, Score: c.hit.Score, Similarity: c.similarity, BM25: c.bm25})
	}
	return out, err
}
