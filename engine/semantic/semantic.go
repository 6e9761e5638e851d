// Package semantic is the vocabulary shared by the domains whose text is
// embedded (the tracker, the knowledge base: each a Corpus) and the
// vectors domain that embeds it (an Index): what a source is, what a
// nearest-neighbour hit and a coverage figure are, and reciprocal rank
// fusion, which the hybrid searches rank with. It imports nothing of the
// project's, so each side links to the other through these interfaces
// (engine/node wires them) and neither imports the other.
package semantic

import (
	"context"
	"math"
	"sort"
	"strings"
)

// Kind is what a source is.
type Kind string

// The embedded kinds of source.
const (
	WorkItem Kind = "work_item"
	Comment  Kind = "comment"
	Page     Kind = "page"
)

// Source is one embeddable text: a work item (title and description), a
// comment on one, a page (title and body).
type Source struct {
	// ID is the source's stable id (wi_…, cm_<seq>, pg_…): a subject
	// token and a ledger object name.
	ID   string
	Kind Kind
	// Owner is the work item a comment is on; empty otherwise.
	Owner string
	Text  string
}

// Hit is a source near a query, with its cosine similarity.
type Hit struct {
	ID         string
	Kind       Kind
	Owner      string
	Similarity float64
}

// Coverage says how much of a corpus has vectors: Embedded of Total
// sources carry a vector of Model, the model this node searches with.
// A gap is a figure, not a fault: the sources without one are still
// found by their words.
type Coverage struct {
	Embedded int     `json:"embedded"`
	Total    int     `json:"total"`
	Ratio    float64 `json:"ratio"`
	Model    string  `json:"model,omitempty"`
}

// NewCoverage is embedded of total (embedded capped at total: vectors of
// sources forgotten a moment ago are not counted past it).
func NewCoverage(embedded, total int, model string) *Coverage {
	embedded = min(embedded, total)
	c := &Coverage{Embedded: embedded, Total: total, Model: model}
	if total > 0 {
		c.Ratio = float64(int(float64(embedded)/float64(total)*10000)) / 10000
	}
	return c
}

// Index answers nearest-neighbour queries over the vectors this node
// holds (the vectors domain's service).
type Index interface {
	// Nearest embeds text and answers at most k sources of the kinds
	// given, most similar first.
	Nearest(ctx context.Context, text string, kinds []Kind, k int) ([]Hit, error)
	// Embedded is how many sources of kind have a vector of Model.
	Embedded(kind Kind) int
	// Model is the model this node embeds queries with.
	Model() string
}

// Corpus is a domain whose text is embedded (the tracker, the knowledge
// base), read by the embedding duty.
type Corpus interface {
	// Sources calls fn for every source whose text may have changed
	// after the corpus's log sequence since (every source for 0), and
	// answers the sequence its snapshot was read at (the next since).
	// Sources and Live read rows level with the corpus's log's end when
	// called: the duty never acts on a copy still replaying.
	Sources(ctx context.Context, since uint64, fn func(Source) error) (through uint64, err error)
	// Live calls fn with the id of every source the corpus holds now;
	// a vector whose source is not among them is forgotten.
	Live(ctx context.Context, fn func(id string) error) error
	// Kinds are the kinds of source the corpus holds.
	Kinds() []Kind
}

// Searcher is a domain whose searches use an Index once one is linked.
type Searcher interface {
	UseIndex(Index)
}

// RRFK is reciprocal rank fusion's constant: a rank r contributes
// 1/(RRFK+r), so the top of either list weighs about the same and a
// source high in both wins.
const RRFK = 60

// Fused is one id of a fused ranking.
type Fused struct {
	ID    string
	Score float64
	// Ranks are the 1-based ranks the id had in each list, 0 where it
	// was absent.
	Ranks []int
}

// Fuse ranks the ids of the lists (each best first, ids unique within a
// list) by reciprocal rank fusion, best first; ties go to the id ranked
// higher in the earlier list, then to the smaller id.
func Fuse(lists ...[]string) []Fused {
	at := map[string]int{}
	var out []Fused
	for li, l := range lists {
		for r, id := range l {
			i, ok := at[id]
			if !ok {
				i = len(out)
				at[id] = i
				out = append(out, Fused{ID: id, Ranks: make([]int, len(lists))})
			}
			if out[i].Ranks[li] == 0 {
				out[i].Ranks[li] = r + 1
				out[i].Score += 1 / float64(RRFK+r+1)
			}
		}
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Score != out[b].Score {
			return out[a].Score > out[b].Score
		}
		for li := range lists {
			ra, rb := out[a].Ranks[li], out[b].Ranks[li]
			if ra != rb {
				return ra != 0 && (rb == 0 || ra < rb)
			}
		}
		return out[a].ID < out[b].ID
	})
	return out
}

// Text is what a source's vector embeds: its title, and its body after a
// blank line where it has one.
func Text(title, body string) string {
	if body == "" {
		return title
	}
	return title + "\n\n" + body
}

// LeadSnippet is a vector-only hit's snippet: the head of its body (no
// word matched to bracket), or its title where the body is empty.
func LeadSnippet(title, body string) string {
	s := strings.Join(strings.Fields(body), " ")
	if s == "" {
		return title
	}
	if r := []rune(s); len(r) > 120 {
		s = string(r[:120]) + "…"
	}
	return s
}

// Round4 is a similarity or a score as the answers show it: four decimals.
func Round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
