// Package vectors is the vectors domain's service: the embeddings of the
// tracker's work items and comments and the knowledge base's pages, on a
// compacted stream (CREWLET_TRACKER_VECTORS: one subject, and one
// message, per source). It is the semantic.Index the hybrid searches
// rank with — an in-memory int8 copy of this node's vector rows, caught
// up from them by sequence — and it holds the embedding duty's work
// (duty.go): the one node that holds the duty embeds what changed in the
// corpora (semantic.Corpus) and publishes the vectors, and forgets the
// sources that are gone. Its record contract is vecrec, its apply side
// vecapply.
//
// The domain keeps no history and claims no agreement: a node joining
// replays each source's current value only, a gap is a coverage figure
// rather than a fault, and the domain gates no seat (Spec.Estate false).
package vectors

import (
	"context"
	"database/sql"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/rest"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/vectors/vecapply"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// MaxAge is how long the stream keeps a source's message: 90 days. The
// rows stay until the source is forgotten; the duty publishes a source's
// vector again before its message ages out (RefreshAfter), so a node
// joining later still replays it.
const MaxAge = 90 * 24 * time.Hour

// Spec is the vectors domain as a node runs it: a compacted stream whose
// ceiling asks for the same quarter of the stream volume the mutation
// log derives (its peak is the whole corpus, not a window of it), no
// gate reserve (nothing is ever evicted through it), and no say in
// whether the node serves the estate.
var Spec = statelog.Spec{
	Domain:     vecapply.Domain{},
	Stream:     vecrec.Stream,
	Compacted:  true,
	MaxAge:     MaxAge,
	CeilingKey: vecrec.CeilingKey,
	Ask:        capacity.VolumeQuarter(4*capacity.GiB, 64*capacity.GiB),
	Service:    func(r statelog.DomainReplica, clock engine.Clock) any { return NewService(r, clock) },
}

// ComponentVectors is the component of the lines this package writes.
const ComponentVectors = "vectors"

// Service is the vectors domain's service.
type Service struct {
	replica statelog.DomainReplica
	clock   engine.Clock

	mu      sync.Mutex
	emb     embed.Embedder
	idx     *index
	corpora []semantic.Corpus
	log     *slog.Logger
	queries map[string][]float32
	duty    dutyState
}

var (
	_ semantic.Index = (*Service)(nil)
	_ rest.Router    = (*Service)(nil)
)

// NewService is the service over its replica, embedding with the builtin
// model until UseEmbedder says otherwise.
func NewService(r statelog.DomainReplica, clock engine.Clock) *Service {
	b := embed.NewBuiltin()
	return &Service{replica: r, clock: clock, emb: b, idx: newIndex(b.Model(), b.Dims()),
		log: slog.New(slog.DiscardHandler), queries: map[string][]float32{}}
}

// UseEmbedder makes e the model this node embeds with (its queries, and
// the duty's sources): the index then holds e's vectors only, and the
// duty embeds again every source whose vector is another model's. A nil
// e (embedder.provider none) turns the node's vector side off: it keeps
// no index, answers every query embed.ErrNone (the searches rank by
// words and say why) and offers no duty, so a fleet's embedding is done
// by a node that can embed. The domain's rows still apply from the log.
func (s *Service) UseEmbedder(e embed.Embedder) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if e == nil {
		s.emb, s.idx, s.queries = nil, nil, map[string][]float32{}
		return
	}
	if s.emb != nil && e.Model() == s.emb.Model() {
		s.emb = e
		return
	}
	s.emb, s.idx, s.queries = e, newIndex(e.Model(), e.Dims()), map[string][]float32{}
}

// UseLogger sets where the duty's lines go.
func (s *Service) UseLogger(l *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.log = l.With(engine.LogComponent, ComponentVectors)
}

// UseCorpus adds a corpus the duty embeds.
func (s *Service) UseCorpus(c semantic.Corpus) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.corpora = append(s.corpora, c)
}

func (s *Service) parts() (embed.Embedder, *index, []semantic.Corpus, *slog.Logger) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.emb, s.idx, append([]semantic.Corpus(nil), s.corpora...), s.log
}

// Model is the model this node embeds with ("" where it embeds nothing).
func (s *Service) Model() string {
	e, _, _, _ := s.parts()
	if e == nil {
		return ""
	}
	return e.Model()
}

// Embedded is how many sources of kind have a vector of Model here.
func (s *Service) Embedded(kind semantic.Kind) int {
	_, idx, _, _ := s.parts()
	if idx == nil {
		return 0
	}
	return idx.count(kind)
}

// catchUp brings the index up to this node's rows. A read the replica
// refuses (the copy stalled, say) leaves the index where it was: the
// answers then say what coverage they had.
func (s *Service) catchUp(ctx context.Context, idx *index) error {
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.Stale}, func(ctx context.Context, tx *sql.Tx) error {
		return idx.catchUp(ctx, tx)
	})
	return err
}

// maxQueryCache bounds the query vectors kept (a provider over HTTP is
// asked once per distinct query text).
const maxQueryCache = 256

// Nearest embeds text and answers at most k sources of kinds nearest to
// it, most similar first, none under the model's floor (unrelated).
func (s *Service) Nearest(ctx context.Context, text string, kinds []semantic.Kind, k int) ([]semantic.Hit, error) {
	emb, idx, _, _ := s.parts()
	if emb == nil {
		return nil, embed.ErrNone
	}
	_ = s.catchUp(ctx, idx)
	q, err := s.queryVector(ctx, emb, text)
	if err != nil {
		return nil, err
	}
	hits := idx.nearest(q, kinds, k)
	for i, h := range hits {
		if h.Similarity < emb.Floor() {
			return hits[:i], nil
		}
	}
	return hits, nil
}

func (s *Service) queryVector(ctx context.Context, emb embed.Embedder, text string) ([]float32, error) {
	key := emb.Model() + "\x00" + text
	s.mu.Lock()
	q, ok := s.queries[key]
	s.mu.Unlock()
	if ok {
		return q, nil
	}
	vs, err := emb.Embed(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	if len(s.queries) >= maxQueryCache {
		s.queries = map[string][]float32{}
	}
	s.queries[key] = vs[0]
	s.mu.Unlock()
	return vs[0], nil
}

// Routes: the domain serves no HTTP route of its own; its figures are in
// the search answers (coverage).
func (s *Service) Routes() []rest.Route { return nil }

func sortHits(h []semantic.Hit) {
	sort.SliceStable(h, func(i, j int) bool {
		if h[i].Similarity != h[j].Similarity {
			return h[i].Similarity > h[j].Similarity
		}
		return h[i].ID < h[j].ID
	})
}
