package fleet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/statelog"
)

// Bucket is the positions register's KV bucket.
const Bucket = "CREWLET_POSITIONS"

// DefaultInterval is the heartbeat period.
const DefaultInterval = 5 * time.Second

// Position is one node's figures for one domain, as it publishes them.
type Position struct {
	Node               string        `json:"node"`
	Domain             engine.Domain `json:"domain"`
	Stream             string        `json:"stream"`
	Generation         uint64        `json:"generation"`
	Seq                uint64        `json:"seq"`
	AppliedThrough     uint64        `json:"applied_through"`
	StreamCreatedAt    time.Time     `json:"stream_created_at"`
	CheckpointStoredAt time.Time     `json:"checkpoint_stored_at"`
	// StartedAt is when this node process entered the register; BeatAt
	// is its last beat (zero until the first, when the position is zero).
	StartedAt time.Time `json:"started_at"`
	BeatAt    time.Time `json:"beat_at"`
	// Apply is the longest apply transaction and the longest batch this
	// node's applier observed in the domain since its process started
	// (Replication: the bulk-apply degradation, measured); ApplyErr the
	// failure the applier is on now, empty while it applies.
	Apply    *statelog.ApplyStats `json:"apply,omitempty"`
	ApplyErr string               `json:"apply_error,omitempty"`
	// WrongLog is the case in which this node found its log is not the one
	// its rows are keyed to (recreated, restored, diverged), empty while
	// it is; LogDiverged marks the restored and diverged cases (a broker
	// restored from an older copy), which crewlet retention status marks.
	WrongLog    string `json:"wrong_log"`
	LogDiverged bool   `json:"log_diverged"`
}

// Key is the register key of a node's domain.
func Key(node string, d engine.Domain) string { return node + "." + string(d) }

// RegisterConfig is what a data node publishes from.
type RegisterConfig struct {
	JS       jetstream.JetStream
	Node     string
	Replicas []*statelog.Replica
	// BucketReplicas is the KV bucket's replica count where this node
	// creates it (the streams' count).
	BucketReplicas int
	Interval       time.Duration
	Clock          engine.Clock
	Logger         *slog.Logger
}

// Register is a running heartbeat.
type Register struct {
	cfg     RegisterConfig
	kv      jetstream.KeyValue
	floors  *Floors
	started time.Time
	log     *slog.Logger
	cancel  context.CancelFunc
	done    chan struct{}

	mu       sync.Mutex
	lastBeat time.Time
	lastErr  error
	known    []Position
	knownAt  time.Time
}

// StartRegister opens (or creates) the bucket, enters every domain of
// this node at position zero, and beats until Close.
func StartRegister(ctx context.Context, cfg RegisterConfig) (*Register, error) {
	if cfg.Interval == 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.BucketReplicas == 0 {
		cfg.BucketReplicas = 1
	}
	kv, err := openBucket(ctx, cfg.JS, cfg.BucketReplicas)
	if err != nil {
		return nil, err
	}
	floors, err := OpenFloors(ctx, cfg.JS, cfg.BucketReplicas)
	if err != nil {
		return nil, err
	}
	r := &Register{cfg: cfg, kv: kv, floors: floors, started: cfg.Clock.Now().UTC(), done: make(chan struct{}),
		log: cfg.Logger.With(engine.LogComponent, engine.ComponentEngine)}
	// The floor is read before the node serves, waiting out a cluster
	// still electing the floors' leader as enter does: a node that has not
	// read it yet knows no more than one that cannot, and would refuse
	// floor_unknown until its next beat.
	deadline := time.Now().Add(time.Minute)
	for r.readFloors(ctx) != nil && ctx.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
	}
	for _, rep := range cfg.Replicas {
		p := Position{Node: cfg.Node, Domain: rep.Domain(), Stream: rep.Stream(), Generation: rep.Generation(), StartedAt: r.started}
		if err := r.enter(ctx, p); err != nil {
			return nil, fmt.Errorf("fleet: enter %s in the positions register: %w", Key(cfg.Node, rep.Domain()), err)
		}
	}
	bctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go r.loop(bctx)
	return r, nil
}

// enter puts a node's zero position, retrying for up to a minute while a
// cluster that is restarting members answers nothing (a boot must not
// fail on the bucket's raft group electing its leader).
func (r *Register) enter(ctx context.Context, p Position) error {
	deadline := time.Now().Add(time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := r.put(actx, p)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func openBucket(ctx context.Context, js jetstream.JetStream, replicas int) (jetstream.KeyValue, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		kv, err := js.KeyValue(actx, Bucket)
		if errors.Is(err, jetstream.ErrBucketNotFound) {
			// History keeps a node's last beats: how it entered the
			// register (at zero) stays readable for a while after.
			kv, err = js.CreateKeyValue(actx, jetstream.KeyValueConfig{Bucket: Bucket, History: 64,
				Storage: jetstream.FileStorage, Replicas: replicas,
				Description: "Crewlet positions register: every data node's position per domain"})
			if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				kv, err = js.KeyValue(actx, Bucket)
			}
		}
		cancel()
		if err == nil {
			return kv, nil
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return nil, fmt.Errorf("fleet: open the positions register %s: %w", Bucket, err)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

func (r *Register) put(ctx context.Context, p Position) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = r.kv.Put(pctx, Key(p.Node, p.Domain), b)
	return err
}

func (r *Register) loop(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		r.Beat(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Beat publishes this node's position in every domain now.
func (r *Register) Beat(ctx context.Context) {
	var errs []error
	now := r.cfg.Clock.Now().UTC()
	for _, rep := range r.cfg.Replicas {
		// The live log against the rows: a recreated stream or a restored
		// broker stops the domain here if nothing found it before.
		rep.VerifyLog(ctx)
		cp, err := rep.Checkpoint(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		p := Position{Node: r.cfg.Node, Domain: rep.Domain(), Stream: cp.Stream, Generation: cp.Generation,
			Seq: cp.Seq, AppliedThrough: cp.AppliedThrough, StreamCreatedAt: cp.StreamCreatedAt.UTC(),
			CheckpointStoredAt: cp.CheckpointStoredAt.UTC(), StartedAt: r.started, BeatAt: now}
		stats := rep.Stats().Apply
		p.Apply = &stats
		if aerr := rep.ApplyErr(); aerr != nil {
			p.ApplyErr = aerr.Error()
		}
		if v := rep.WrongLog(); v != nil {
			p.WrongLog = v.Case
			p.LogDiverged = v.Case == statelog.WrongLogRestored || v.Case == statelog.WrongLogDiverged
		}
		if err := r.put(ctx, p); err != nil {
			errs = append(errs, err)
		} else {
			rep.SetPublished(p.Seq, r.cfg.Clock.Now())
		}
	}
	ferr := r.readFloors(ctx)
	// Read the whole register back on every beat, so a node cut off from
	// the register's leader can still say what it last saw.
	all, rerr := ReadAll(ctx, r.kv)
	switch {
	case rerr != nil:
	case ferr != nil:
		// Which generation the fleet is on is not established: judge
		// neither it nor the truncation, and leave both verdicts where
		// they were. The peer whose rows hold what a log lost is usually
		// the one that then re-anchors past it, so judging the truncation
		// alone could lift that fence on the very beat that cannot yet
		// say the passed verdict replaces it.
		r.log.Warn(statelog.EvGenerationsUnread, engine.LogErr, ferr.Error())
	default:
		r.judgeGenerations(ctx, all)
		r.judgeTruncation(ctx, all)
	}
	err := errors.Join(errs...)
	r.mu.Lock()
	if rerr == nil {
		r.known, r.knownAt = all, now
	}
	prev := r.lastErr
	r.lastErr = err
	if err == nil {
		r.lastBeat = now
	}
	r.mu.Unlock()
	if err != nil && prev == nil && ctx.Err() == nil {
		r.log.Warn("fleet_heartbeat_failed", engine.LogErr, err.Error())
	}
}

// judgeGenerations gives each replica the verdict that a peer re-anchored
// its log past this node's generation, from the register read on this
// beat (statelog_generation_passed): the highest generation a peer holds
// on the same stream.
func (r *Register) judgeGenerations(ctx context.Context, all []Position) {
	for _, rep := range r.cfg.Replicas {
		var peer string
		var top uint64
		for _, p := range all {
			if p.Node != r.cfg.Node && p.Domain == rep.Domain() && p.Stream == rep.Stream() && p.Generation > top {
				peer, top = p.Node, p.Generation
			}
		}
		if top <= rep.Generation() {
			continue
		}
		// Whether the peer that opened it is evicted decides whether the
		// verdict names an adoption or a reanchor (abandoned).
		evicted, err := rep.EvictedNodes(ctx)
		if err != nil {
			r.log.Warn(statelog.EvGenerationHolderUnread, engine.LogDomain, string(rep.Domain()), "peer", peer, "generation", top, engine.LogErr, err.Error())
			continue
		}
		rep.GenerationPassed(ctx, peer, top, slices.Contains(evicted, peer))
	}
}

// judgeTruncation gives each replica the verdict that a peer's rows hold
// records its log lost: a live peer on the same stream and generation
// whose checkpoint is past the log's end, or which reported
// log_diverged. The log's end is read after the register, so a right
// log is at or past every checkpoint the register showed.
func (r *Register) judgeTruncation(ctx context.Context, all []Position) {
	for _, rep := range r.cfg.Replicas {
		if rep.WrongLog() != nil {
			continue // its own log is wrong: that verdict says more
		}
		info, err := rep.LogInfo(ctx)
		if err != nil || info.Leaderless {
			if err == nil {
				err = fmt.Errorf("%s has no leader", rep.Stream())
			}
			rep.TruncationUnread(err)
			continue
		}
		evicted, err := rep.EvictedNodes(ctx)
		if err != nil {
			rep.TruncationUnread(err)
			continue
		}
		var verdict *statelog.Truncation
		for _, p := range all {
			if p.Node == r.cfg.Node || p.Domain != rep.Domain() || p.Stream != rep.Stream() || p.Generation != rep.Generation() ||
				!p.StreamCreatedAt.Equal(info.Created.UTC()) || slices.Contains(evicted, p.Node) {
				continue
			}
			if p.Seq > info.LastSeq || p.LogDiverged {
				verdict = &statelog.Truncation{Peer: p.Node, PeerSeq: p.Seq, LastSeq: info.LastSeq, PeerDiverged: p.LogDiverged}
				break
			}
		}
		rep.JudgeTruncation(verdict)
	}
}

// readFloors hands each replica its log's published trim floor, or the
// error that kept it from being read (the replica refuses floor_unknown
// unless its rows stand at or past a position the register took from it
// moments ago, which the floor is never past: a floor is never guessed),
// and answers the first such error. A floor published for another
// stream or generation than the replica's rows is none of its business.
func (r *Register) readFloors(ctx context.Context) error {
	var first error
	for _, rep := range r.cfg.Replicas {
		f, _, ok, err := r.floors.Read(ctx, rep.Domain())
		if err != nil {
			err = fmt.Errorf("the trim floors %s cannot be read: %w", FloorBucket, err)
			rep.SetFloor(0, err)
			if first == nil {
				first = err
			}
			continue
		}
		if !ok || f.Stream != rep.Stream() || f.Generation != rep.Generation() {
			rep.SetFloor(0, nil)
			continue
		}
		rep.SetFloor(f.Through, nil)
	}
	return first
}

// Floors is where the trim floors are published.
func (r *Register) Floors() *Floors { return r.floors }

// StartedAt is when this process entered the register.
func (r *Register) StartedAt() time.Time { return r.started }

// Known is the register as this node last read it, and when.
func (r *Register) Known() ([]Position, time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Position(nil), r.known...), r.knownAt
}

// KV is the register's bucket (the retention answer reads it).
func (r *Register) KV() jetstream.KeyValue { return r.kv }

// Node is this node's name.
func (r *Register) Node() string { return r.cfg.Node }

// Close stops the heartbeat.
func (r *Register) Close() {
	if r == nil || r.cancel == nil {
		return
	}
	r.cancel()
	<-r.done
}
