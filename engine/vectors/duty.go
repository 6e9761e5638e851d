package vectors

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/duty"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/semantic"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/vectors/vecrec"
)

// DutyName is the embedding duty's name in the fleet's duty lease.
const DutyName = "embedding"

// Duty timings.
const (
	// DutyInterval is how often the holder looks for what changed.
	DutyInterval = time.Second
	// LiveEvery bounds how often it lists every live source to forget the
	// gone ones, while the corpora move.
	LiveEvery = 5 * time.Second
	// RefreshAfter is the age past which the holder publishes a source's
	// vector again (unchanged, from its row) so the stream, which keeps a
	// message MaxAge, still holds it for a node that joins later.
	RefreshAfter = 60 * 24 * time.Hour
	// embedBatch is how many sources are embedded at once.
	embedBatch = 32
	// publishers is how many writes the holder has in flight: a whole
	// embedded batch, so that its puts are under way together and the
	// log's combiner (engine/broker, from 16 appends under way) sends
	// them as atomic batches, a few fsyncs and one apply for many puts
	// rather than each of its own. With 4 in flight every put was an
	// append alone: over five sittings of crewlet bench --profile (create
	// c=64, the measurement's and the -after profiles), the embedding of a
	// create took a median 446 µs of CPU against 588.
	publishers = embedBatch
	// refreshPerPass bounds the refreshes of one pass.
	refreshPerPass = 1000
)

// dutyState is what the holder remembers between passes: each corpus's
// log sequence read through, and when it last listed the live sources.
type dutyState struct {
	mu        sync.Mutex
	since     map[semantic.Corpus]uint64
	livedAt   time.Time
	livedSeen map[semantic.Corpus]uint64
}

// Pass is what one reconciliation did.
type Pass struct {
	Embedded, Forgotten, Refreshed int
}

// Duties are the duty this service holds work for (duty.Provider): the
// embedding duty, whose work runs while this node holds its lease; none
// on a node that embeds nothing (embedder.provider none), which must not
// hold the fleet's one duty.
func (s *Service) Duties() []duty.Job {
	if e, _, _, _ := s.parts(); e == nil {
		return nil
	}
	return []duty.Job{{Name: DutyName, Run: func(ctx context.Context, _ *slog.Logger) error { return s.Work(ctx) }}}
}

// Work is the embedding duty: while ctx lasts (the lease held), it
// reconciles every DutyInterval — embeds the sources whose text changed,
// forgets the sources that are gone, refreshes vectors about to age out
// of the stream — and answers ctx's error when the lease ends. A failed
// pass (the provider unreachable, the log refusing) is logged and tried
// again on the next tick; nothing it published is lost, since the next
// pass compares against the rows.
func (s *Service) Work(ctx context.Context) error {
	t := time.NewTicker(DutyInterval)
	defer t.Stop()
	failing := false
	for {
		p, err := s.Reconcile(ctx)
		_, _, _, log := s.parts()
		switch {
		case err != nil && ctx.Err() == nil:
			if !failing {
				log.Warn("vectors_duty_failing", engine.LogErr, err.Error())
			}
			failing = true
		case err == nil:
			if failing {
				log.Info("vectors_duty_recovered")
			}
			failing = false
			if p != (Pass{}) {
				log.Info("vectors_published", "embedded", p.Embedded, "forgotten", p.Forgotten, "refreshed", p.Refreshed)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// TextHash is what a put's text_hash holds: the model and the text.
func TextHash(model, text string) string {
	h := sha256.Sum256([]byte(model + "\x00" + embed.Truncate(text)))
	return hex.EncodeToString(h[:16])
}

// Reconcile is one pass of the duty.
func (s *Service) Reconcile(ctx context.Context) (Pass, error) {
	emb, idx, corpora, _ := s.parts()
	var p Pass
	if emb == nil {
		return p, embed.ErrNone
	}
	if err := s.catchUp(ctx, idx); err != nil {
		return p, err
	}
	model := emb.Model()
	s.duty.mu.Lock()
	if s.duty.since == nil {
		s.duty.since, s.duty.livedSeen = map[semantic.Corpus]uint64{}, map[semantic.Corpus]uint64{}
	}
	s.duty.mu.Unlock()
	for _, c := range corpora {
		n, err := s.embedChanged(ctx, emb, idx, c, model)
		p.Embedded += n
		if err != nil {
			return p, err
		}
	}
	n, err := s.forgetGone(ctx, idx, corpora)
	p.Forgotten = n
	if err != nil {
		return p, err
	}
	p.Refreshed, err = s.refresh(ctx, idx)
	return p, err
}

// embedChanged embeds and publishes the sources of c whose text changed
// since the sequence last read through.
func (s *Service) embedChanged(ctx context.Context, emb embed.Embedder, idx *index, c semantic.Corpus, model string) (int, error) {
	s.duty.mu.Lock()
	since := s.duty.since[c]
	s.duty.mu.Unlock()
	var todo []semantic.Source
	var hashes []string
	through, err := c.Sources(ctx, since, func(src semantic.Source) error {
		h := TextHash(model, src.Text)
		idx.mu.RLock()
		m, ok := idx.meta[src.ID]
		idx.mu.RUnlock()
		if ok && m.model == model && m.hash == h && m.owner == src.Owner {
			return nil
		}
		todo, hashes = append(todo, src), append(hashes, h)
		return nil
	})
	if err != nil {
		return 0, err
	}
	done := 0
	for start := 0; start < len(todo); start += embedBatch {
		end := min(start+embedBatch, len(todo))
		texts := make([]string, 0, end-start)
		for _, src := range todo[start:end] {
			texts = append(texts, src.Text)
		}
		vs, err := emb.Embed(ctx, texts)
		if err != nil {
			return done, err
		}
		puts := make([]vecrec.Put, 0, end-start)
		for i, src := range todo[start:end] {
			puts = append(puts, vecrec.Put{Source: src.ID, Kind: string(src.Kind), Owner: src.Owner, Model: model, Dims: len(vs[i]),
				Vector: vecrec.EncodeVector(vs[i]), TextHash: hashes[start+i]})
		}
		n, err := s.publish(ctx, puts, nil)
		done += n
		if err != nil {
			return done, err
		}
	}
	s.duty.mu.Lock()
	s.duty.since[c] = through
	s.duty.mu.Unlock()
	return done, nil
}

// forgetGone lists the live sources of every corpus (at most every
// LiveEvery while they move, and on the first pass) and forgets each
// vector whose source is not among them.
func (s *Service) forgetGone(ctx context.Context, idx *index, corpora []semantic.Corpus) (int, error) {
	s.duty.mu.Lock()
	moved := s.duty.livedAt.IsZero()
	for _, c := range corpora {
		moved = moved || s.duty.livedSeen[c] != s.duty.since[c]
	}
	due := moved && s.clock.Now().Sub(s.duty.livedAt) >= LiveEvery
	s.duty.mu.Unlock()
	if !due {
		return 0, nil
	}
	live := map[string]bool{}
	kinds := map[semantic.Kind]bool{}
	seen := map[semantic.Corpus]uint64{}
	for _, c := range corpora {
		s.duty.mu.Lock()
		seen[c] = s.duty.since[c]
		s.duty.mu.Unlock()
		for _, k := range c.Kinds() {
			kinds[k] = true
		}
		if err := c.Live(ctx, func(id string) error { live[id] = true; return nil }); err != nil {
			return 0, err
		}
	}
	var gone []string
	idx.mu.RLock()
	for src, m := range idx.meta {
		if kinds[m.kind] && !live[src] {
			gone = append(gone, src)
		}
	}
	idx.mu.RUnlock()
	n, err := s.publish(ctx, nil, gone)
	if err == nil {
		s.duty.mu.Lock()
		s.duty.livedAt, s.duty.livedSeen = s.clock.Now(), seen
		s.duty.mu.Unlock()
	}
	return n, err
}

// refresh publishes again the vectors whose message is about to age out
// of the stream, from their rows.
func (s *Service) refresh(ctx context.Context, idx *index) (int, error) {
	cut := s.clock.Now().Add(-RefreshAfter).UnixNano()
	var old []string
	idx.mu.RLock()
	for src, m := range idx.meta {
		if m.at < cut && len(old) < refreshPerPass {
			old = append(old, src)
		}
	}
	idx.mu.RUnlock()
	if len(old) == 0 {
		return 0, nil
	}
	var puts []vecrec.Put
	_, err := s.replica.Read(ctx, engine.ReadOptions{Level: engine.Stale}, func(ctx context.Context, tx *sql.Tx) error {
		for _, src := range old {
			var p vecrec.Put
			var blob []byte
			err := tx.QueryRowContext(ctx, `SELECT source, kind, owner, model, dims, vec, text_hash FROM vectors WHERE source = ?`, src).
				Scan(&p.Source, &p.Kind, &p.Owner, &p.Model, &p.Dims, &blob, &p.TextHash)
			if errors.Is(err, sql.ErrNoRows) {
				continue
			} else if err != nil {
				return err
			}
			v, err := vecrec.BlobVector(blob, p.Dims)
			if err != nil {
				continue
			}
			p.Vector = vecrec.EncodeVector(v)
			puts = append(puts, p)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return s.publish(ctx, puts, nil)
}

// publish writes the puts and the forgets, publishers at a time, and
// answers how many were applied here; the first failure is the error.
// A write answered pending is on the log and counts; one answered
// unknown is written again by a later pass, which compares against the
// rows.
func (s *Service) publish(ctx context.Context, puts []vecrec.Put, forgets []string) (int, error) {
	type job struct {
		source string
		kind   string
		ver    int
		verb   string
		body   any
	}
	jobs := make(chan job)
	var mu sync.Mutex
	done := 0
	var first error
	var wg sync.WaitGroup
	for range publishers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				n, err := s.write(ctx, j.verb, j.source, j.kind, j.ver, j.body)
				mu.Lock()
				done += n
				if err != nil && first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	send := func(j job) bool {
		mu.Lock()
		failed := first != nil
		mu.Unlock()
		if failed {
			return false
		}
		select {
		case jobs <- j:
			return true
		case <-ctx.Done():
			return false
		}
	}
	for _, p := range puts {
		if !send(job{p.Source, vecrec.KindPut, vecrec.PutVersion, "embed", p}) {
			break
		}
	}
	for _, src := range forgets {
		if !send(job{src, vecrec.KindForget, vecrec.ForgetVersion, "forget", vecrec.Forget{Source: src}}) {
			break
		}
	}
	close(jobs)
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return done, first
}

// write appends one record about source under a fresh operation.
func (s *Service) write(ctx context.Context, verb, source, kind string, version int, payload any) (int, error) {
	op, err := statelog.OpFor(s.clock.Now(), engine.WriteOptions{}, verb, source)
	if err != nil {
		return 0, err
	}
	wr, err := s.replica.Write(ctx, op, func(context.Context, *sql.Tx) (*statelog.Proposal, error) {
		return &statelog.Proposal{Kind: kind, Version: version, Subject: vecrec.Subject(source), Scope: vecrec.Scope(source), Payload: payload}, nil
	})
	if err != nil {
		return 0, err
	}
	switch wr.Outcome {
	case engine.Applied, engine.Pending:
		return 1, nil
	}
	return 0, fmt.Errorf("vectors: %s of %s answered %s", verb, source, wr.Outcome)
}
