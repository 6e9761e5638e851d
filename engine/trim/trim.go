package trim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Defaults.
const (
	// DefaultMinAge is the age floor: no record younger is removed.
	DefaultMinAge = 30 * 24 * time.Hour
	// DefaultInterval is how often the trim runs.
	DefaultInterval = time.Minute
)

// Backups is what the backup gate reads: per domain, the highest
// checkpoint sequence a stored snapshot covers (the snapshot repository).
type Backups interface {
	Reached(ctx context.Context) (map[string]uint64, error)
}

// Log is a domain's stream as the trim needs it (engine/broker.Log).
type Log interface {
	Stream() string
	Info(ctx context.Context) (statelog.LogInfo, error)
	Get(ctx context.Context, seq uint64) (statelog.StoredMsg, error)
	// PurgeThrough removes every record at or below seq.
	PurgeThrough(ctx context.Context, seq uint64) error
}

// Target is one log the trim runs on: its replica on this node (for the
// generation and the evictions its rows hold) and its stream.
type Target struct {
	Replica *statelog.Replica
	Log     Log
}

// Config is what a Trimmer runs from.
type Config struct {
	// Node is this node's name.
	Node string
	// Targets are the logs to trim; a compacted stream is never one (it
	// keeps one value per subject, which a purge would lose).
	Targets []Target
	// Register is the positions register; Floors the floors' bucket.
	Register jetstream.KeyValue
	Floors   *fleet.Floors
	// Backups is the backup gate's source; nil holds every floor at zero
	// (no backup reached anything).
	Backups  Backups
	MinAge   time.Duration
	Interval time.Duration
	Clock    engine.Clock
	Logger   *slog.Logger
}

// Trimmer runs the trim on one node.
type Trimmer struct {
	cfg    Config
	log    *slog.Logger
	cancel context.CancelFunc
	done   chan struct{}
}

// New builds a trimmer; Start runs it on its interval.
func New(cfg Config) *Trimmer {
	if cfg.MinAge == 0 {
		cfg.MinAge = DefaultMinAge
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Trimmer{cfg: cfg, log: cfg.Logger.With(engine.LogComponent, engine.ComponentEngine)}
}

// Start runs Once every interval until Close.
func (t *Trimmer) Start() {
	ctx, cancel := context.WithCancel(context.Background())
	t.cancel, t.done = cancel, make(chan struct{})
	go func() {
		defer close(t.done)
		tick := time.NewTicker(t.cfg.Interval)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if _, err := t.Once(ctx); err != nil && ctx.Err() == nil {
				t.log.Warn("trim_failed", engine.LogErr, err.Error())
			}
		}
	}()
}

// Close stops the loop.
func (t *Trimmer) Close() {
	if t == nil || t.cancel == nil {
		return
	}
	t.cancel()
	<-t.done
}

// Once runs one trim of every log this node is the trimmer of, and
// returns the floors it published.
func (t *Trimmer) Once(ctx context.Context) ([]fleet.Floor, error) {
	positions, err := fleet.ReadAll(ctx, t.cfg.Register)
	if err != nil {
		return nil, fmt.Errorf("trim: the positions register cannot be read: %w", err)
	}
	var reached map[string]uint64
	if t.cfg.Backups != nil {
		rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		reached, err = t.cfg.Backups.Reached(rctx)
		cancel()
		if err != nil {
			// The gate is unread: nothing moves past where it stands.
			return nil, fmt.Errorf("trim: what the backups reached cannot be read: %w", err)
		}
	}
	var out []fleet.Floor
	var errs []error
	for _, tg := range t.cfg.Targets {
		f, trimmed, err := t.one(ctx, tg, positions, reached)
		if err != nil {
			errs = append(errs, fmt.Errorf("trim %s: %w", tg.Log.Stream(), err))
			continue
		}
		if trimmed {
			out = append(out, f)
		}
	}
	return out, errors.Join(errs...)
}

// one trims one log where this node is its trimmer: the floor computed
// from the terms, never below the one published, published first and
// then purged (a node reading the floor learns of the purge no later
// than the purge happens).
func (t *Trimmer) one(ctx context.Context, tg Target, positions []fleet.Position, reached map[string]uint64) (fleet.Floor, bool, error) {
	d := tg.Replica.Domain()
	info, err := tg.Log.Info(ctx)
	if err != nil {
		return fleet.Floor{}, false, err
	}
	if info.Leaderless {
		return fleet.Floor{}, false, nil // no leader to purge; the next run
	}
	evicted, err := tg.Replica.EvictedNodes(ctx)
	if err != nil {
		return fleet.Floor{}, false, err
	}
	counted := Counted(positions, d, tg.Log.Stream(), evicted)
	if TrimmerOf(info.Leader, counted) != t.cfg.Node {
		return fleet.Floor{}, false, nil
	}
	terms := []fleet.Term{NodeTerm(counted), t.backupTerm(ctx, d, reached)}
	age, err := AgeTerm(ctx, tg.Log, info, t.cfg.Clock.Now().Add(-t.cfg.MinAge))
	if err != nil {
		return fleet.Floor{}, false, err
	}
	age.Holder = fmt.Sprintf("the records after %d are younger than the age floor (%s)", age.Seq, t.cfg.MinAge)
	terms = append(terms, age)
	hold := Holding(terms)
	cur, rev, _, err := t.cfg.Floors.Read(ctx, d)
	if err != nil {
		return fleet.Floor{}, false, err
	}
	if cur.Stream != tg.Log.Stream() || cur.Generation != tg.Replica.Generation() {
		cur.Through = 0 // another stream's floor says nothing of this one
	}
	f := fleet.Floor{Domain: d, Stream: tg.Log.Stream(), Generation: tg.Replica.Generation(),
		Through: max(cur.Through, min(hold.Seq, info.LastSeq)), Term: hold.Term, Holder: hold.Holder, Terms: terms,
		By: t.cfg.Node, At: t.cfg.Clock.Now().UTC()}
	if f.Through != cur.Through || f.Term != cur.Term || f.Holder != cur.Holder {
		if err := t.cfg.Floors.Publish(ctx, f, rev); err != nil {
			return fleet.Floor{}, false, fmt.Errorf("publish the floor: %w", err)
		}
	}
	if f.Through >= info.FirstSeq && f.Through > 0 {
		if err := tg.Log.PurgeThrough(ctx, f.Through); err != nil {
			return fleet.Floor{}, false, fmt.Errorf("purge through %d: %w", f.Through, err)
		}
		t.log.Info("trim_purged", engine.LogDomain, string(d), engine.LogStream, tg.Log.Stream(), "through", f.Through,
			"first_seq", info.FirstSeq, "term", f.Term, "holder", f.Holder)
	}
	return f, true, nil
}

// backupTerm is the backup gate's figure for d: the highest checkpoint a
// stored snapshot covers, naming that snapshot where the repository can
// list its artefacts.
func (t *Trimmer) backupTerm(ctx context.Context, d engine.Domain, reached map[string]uint64) fleet.Term {
	bt := fleet.Term{Term: fleet.TermBackup, Holder: "no snapshot repository: no backup has reached anything"}
	if t.cfg.Backups == nil {
		return bt
	}
	bt.Seq = reached[string(d)]
	if bt.Seq == 0 {
		bt.Holder = "no stored snapshot covers " + string(d) + " yet: take one (crewlet retention backup)"
		return bt
	}
	bt.Holder = fmt.Sprintf("the newest snapshot covers %s through %d", d, bt.Seq)
	if lister, ok := t.cfg.Backups.(snapshot.Repository); ok {
		if ms, err := lister.List(ctx); err == nil {
			for _, m := range ms {
				if p, ok := m.Domains[string(d)]; ok && p.Seq == bt.Seq {
					bt.Holder = fmt.Sprintf("snapshot %s (taken %s) covers %s through %d", m.Name, m.TakenAt.UTC().Format(time.RFC3339), d, bt.Seq)
					break
				}
			}
		}
	}
	return bt
}

// Counted are the register's positions the trim waits for on a log: every
// node in the register for the domain and stream, but the evicted.
func Counted(positions []fleet.Position, d engine.Domain, stream string, evicted []string) []fleet.Position {
	gone := map[string]bool{}
	for _, n := range evicted {
		gone[n] = true
	}
	var out []fleet.Position
	for _, p := range positions {
		if p.Domain == d && (p.Stream == stream || p.Stream == "") && !gone[p.Node] {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// TrimmerOf is the node that trims a log: the leader's, where it is a
// counted node, else the lowest-named counted node.
func TrimmerOf(leader string, counted []fleet.Position) string {
	for _, p := range counted {
		if p.Node == leader {
			return leader
		}
	}
	if len(counted) == 0 {
		return ""
	}
	return counted[0].Node
}

// NodeTerm is the lowest position any counted node stands at: it has
// applied nothing past it.
func NodeTerm(counted []fleet.Position) fleet.Term {
	if len(counted) == 0 {
		return fleet.Term{Term: fleet.TermNode, Holder: "no data node is in the positions register"}
	}
	low := counted[0]
	for _, p := range counted[1:] {
		if p.Seq < low.Seq {
			low = p
		}
	}
	return fleet.Term{Term: fleet.TermNode, Seq: low.Seq, Holder: low.Node}
}

// Holding is the term that holds the floor: the lowest, the first listed
// on a tie.
func Holding(terms []fleet.Term) fleet.Term {
	h := terms[0]
	for _, t := range terms[1:] {
		if t.Seq < h.Seq {
			h = t
		}
	}
	return h
}

// probeLimit bounds how far AgeTerm walks over deleted sequences to find
// a record (a deletion inside the log is rare: a purge by subject).
const probeLimit = 256

// AgeTerm is the newest record stored at or before cutoff (the broker's
// instants grow with the sequence), found by bisection over the log's
// range; FirstSeq-1 when every record is younger.
func AgeTerm(ctx context.Context, l Log, info statelog.LogInfo, cutoff time.Time) (fleet.Term, error) {
	t := fleet.Term{Term: fleet.TermAge}
	if info.LastSeq == 0 || info.FirstSeq > info.LastSeq {
		t.Seq = info.LastSeq // nothing held: nothing younger to keep
		return t, nil
	}
	t.Seq = info.FirstSeq - 1
	lo, hi := info.FirstSeq, info.LastSeq
	for lo <= hi {
		mid := lo + (hi-lo)/2
		m, err := atOrAfter(ctx, l, mid, hi)
		if errors.Is(err, statelog.ErrNoMessage) {
			hi = mid - 1
			continue
		}
		if err != nil {
			return t, err
		}
		if m.Time.After(cutoff) {
			hi = mid - 1
			continue
		}
		t.Seq, lo = m.Seq, m.Seq+1
	}
	return t, nil
}

// atOrAfter is the first record at or after seq and at most hi.
func atOrAfter(ctx context.Context, l Log, seq, hi uint64) (statelog.StoredMsg, error) {
	for i := 0; seq <= hi && i < probeLimit; seq, i = seq+1, i+1 {
		m, err := l.Get(ctx, seq)
		if !errors.Is(err, statelog.ErrNoMessage) {
			return m, err
		}
	}
	return statelog.StoredMsg{}, statelog.ErrNoMessage
}
