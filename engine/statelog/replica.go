package statelog

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/pprof"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/metrics"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/ledger"
)

// Schema is the framework's own tables: the checkpoint (one row per
// domain), the per-subject arbitration anchors and the records retained
// because this build cannot decode them.
const Schema = `
CREATE TABLE IF NOT EXISTS statelog_checkpoint (
	domain               TEXT PRIMARY KEY,
	stream               TEXT NOT NULL,
	generation           INTEGER NOT NULL,
	seq                  INTEGER NOT NULL,
	applied_through      INTEGER NOT NULL,
	stream_created_at    INTEGER NOT NULL,
	checkpoint_stored_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS statelog_anchor (
	domain  TEXT NOT NULL,
	subject TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	PRIMARY KEY (domain, subject)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS statelog_gated (
	domain  TEXT NOT NULL,
	seq     INTEGER NOT NULL,
	op_id   TEXT NOT NULL,
	subject TEXT NOT NULL,
	kind    TEXT NOT NULL,
	writer  TEXT NOT NULL,
	gate    TEXT NOT NULL,
	PRIMARY KEY (domain, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS statelog_retained (
	domain      TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	scope       TEXT NOT NULL,
	scope_known INTEGER NOT NULL,
	data        BLOB NOT NULL,
	stored_at   INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (domain, seq)
) WITHOUT ROWID;
`

// Config is what a Replica is built from.
type Config struct {
	Node       string
	Generation uint64
	DB         *sql.DB
	Log        Log
	Domain     Domain
	Clock      engine.Clock
	Logger     *slog.Logger
	// Publishing is false in a capacity window (maintenance, seal): the
	// replica then appends nothing, barriers included.
	Publishing bool
	// RetryBudget, WriteWait and ReadBudget: see node.Config.
	RetryBudget time.Duration
	WriteWait   time.Duration
	ReadBudget  time.Duration
	// PublishTimeout bounds one append (default 5 s).
	PublishTimeout time.Duration
	// ElectionBound is how long a replicated log may answer nothing, or
	// no_quorum, while its broker elects a stream leader; 0 for a log no
	// election touches. An append whose answer was lost asks the log for
	// its record for at least this long before calling it unknown.
	ElectionBound time.Duration
	// WriteRounds bounds how often a write is decided again after losing
	// the arbitration (default 16).
	WriteRounds int
	// OwnWrite, when set, is told the position of every write this node
	// answered at a position (the node's read-your-writes floor table,
	// engine/turns.Floors).
	OwnWrite func(engine.Position)
	// BeforeCommit runs inside every batch transaction before the commit.
	BeforeCommit func(tx *sql.Tx, lastSeq uint64) error
	// AckEvery spaces the applier's acknowledgements to the broker: at
	// most one per AckEvery (0: one per applied batch). See acker.
	AckEvery time.Duration
	// Gates are the framework's gates, asked in order before the domain's.
	Gates []Gate
	// GateReserve holds ordinary appends a sixteenth short of the log's
	// ceiling (Spec.GateReserve).
	GateReserve bool
	// Streams names every domain's stream on this node, so an answer
	// about a record on another domain's log (an op id reused there)
	// names its position.
	Streams map[engine.Domain]string
	// FormatVersion is the newest record format this build reads
	// (default record.FormatVersion); the scripts play an older or a
	// newer build with it.
	FormatVersion int
	// Disabled, when set, makes every batch fail with its error: a test
	// seam that halts the applier in place.
	Disabled func() error
	// Metrics is the domain's counters (nil counts nothing).
	Metrics *metrics.Domain
	// DeferralGrace is how long a retained record may wait before the
	// deferral alarm names it (default DefaultDeferralGrace).
	DeferralGrace time.Duration
	// Compacted says the stream keeps one message per subject: a gap in
	// it is the broker replacing an old value, not a hole (Spec.Compacted).
	Compacted bool
	// ProgressEvery is how often a replay after opening (catching up
	// with the log's end as it stood then) logs its progress (default
	// DefaultProgressEvery).
	ProgressEvery time.Duration
	// BelowFloor opens the replica held: no reader, no applier, every
	// read and write refused below_floor, until Resume (its rows are to be
	// replaced by a peer's snapshot).
	BelowFloor bool
}

// Replica is one domain's replicated copy on this node: its applier, its
// write path and its read path.
type Replica struct {
	cfg    Config
	domain engine.Domain
	stream string
	log    *slog.Logger

	progress progress
	// ownLast is the highest sequence this node's own writes were
	// answered at (see write: the writes still under way are not in it).
	ownLast atomic.Uint64
	// logEnd is the last sequence the broker is known to hold, learnt from
	// deliveries and appends without asking.
	logEnd atomic.Uint64
	drain  drainRate
	stats  applyStats
	// retained counts records held undecoded, so a read asks the
	// database for the incomplete block only when there is one.
	retained atomic.Int64
	// scopeUnknown counts the retained records whose scope could not be
	// read; each blocks every read of the domain.
	scopeUnknown atomic.Int64
	// evicted says this node stands evicted on this log: its reads and
	// writes refuse evicted.
	evicted atomic.Bool
	// batches and delivered count the batches the applier applied and
	// the deliveries they carried (ApplyBatches); applied counts the
	// records above the checkpoint among them.
	batches, delivered, applied atomic.Uint64
	// evictions says statelog_evictions may hold a row of this domain
	// (see evictionGate).
	evictions atomic.Bool
	// gateChanged says a batch applied a node-gate record: the evicted
	// standing is read again once it commits.
	gateChanged atomic.Bool
	// capacity holds the log's fill, for the ordinary ceiling.
	capacity capacity
	// alarms holds what the alarms read that no table keeps: the newest
	// record a gate dropped, and when each retained record was appended.
	alarms alarmState
	// observers are told each commit's applied records (OnApplied).
	observers observers
	// landed notes the newest operations applied, for the writes waiting.
	landed landedNotes
	// answerer is the domain where it reads its writes' answers in the
	// apply (nil otherwise); answers holds them for the writes waiting.
	answerer Answerer
	answers  answerRows
	// appends counts this node's write appends under way; gatherer is
	// the applier's wait for the records they bring (gather.go).
	appends  appendsUnderWay
	gatherer gatherer

	// floor is the log's published trim floor as the heartbeat last read
	// it (see floor.go). belowFloor says the trim removed records this
	// node never applied: found by the applier or the boot, or a replica
	// opened held (Config.BelowFloor) until Resume; its reads and writes
	// refuse below_floor. life serialises Resume with Close.
	floor      floorState
	belowFloor atomic.Bool
	life       sync.Mutex
	// closing is closed when Close begins: a write still asking the log
	// about a lost append stops asking a broker this node is leaving.
	closing     chan struct{}
	closingOnce sync.Once

	faultMu  sync.Mutex
	faulted  bool
	lastErr  error
	stopped  error
	barriers barrierGroup

	stmts *sqlite.Statements
	// bound is the statements bound to the transaction of the batch
	// being applied; only the applier's goroutine touches it.
	bound *sqlite.Bound
	// anchors is what the batch being applied moved, ledger the
	// operations it recorded (applier only).
	anchors movedAnchors
	ledger  batchLedger
	// held is what the domain keeps back in the batch's transaction
	// (Applying.Hold; applier only).
	held Held
	// wrong is the verdict that the live log is not the one the rows are
	// keyed to (wronglog.go); zero says when a write at an expectation of
	// zero last read the stream's creation instant.
	wrong wrongLogState
	zero  zeroCheck
	// marks are the creation marks writes at zero ride on a replicated
	// log instead of asking (zeromark.go).
	marks zeroMarks
	// gens are the generations this node's rows entered (generations.go);
	// strange the record that stopped the applier for a generation it
	// never entered (reanchor.go).
	gens    generations
	strange atomic.Pointer[strangeRecord]
	// truncated is the verdict that a peer's rows hold records the log
	// lost (truncated.go).
	truncated truncationState
	// cover is the scopes of the retained records as the batch being
	// applied sees them (retain.go; applier only), nil until needed.
	cover *coverSet
	// format is the newest record format this build reads; kinds and
	// gateKinds the domain's record kinds with their versions and the
	// ones that install a gate (kinds.go).
	format    int
	kinds     map[string]int
	gateKinds []string
	gates     []Gate
	sub       Subscription
	cancel    context.CancelFunc
	done      chan struct{}
}

// Checkpoint is a domain's row of statelog_checkpoint.
type Checkpoint struct {
	Stream             string
	Generation         uint64
	Seq                uint64
	AppliedThrough     uint64
	StreamCreatedAt    time.Time
	CheckpointStoredAt time.Time
}

// Open creates the framework's and the domain's tables, reads the
// checkpoint and starts the applier from it, never from the consumer.
func Open(ctx context.Context, cfg Config) (*Replica, error) {
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.RetryBudget == 0 {
		cfg.RetryBudget = 30 * time.Second
	}
	if cfg.WriteWait == 0 {
		cfg.WriteWait = 5 * time.Second
	}
	if cfg.ReadBudget == 0 {
		cfg.ReadBudget = 2 * time.Second
	}
	if cfg.PublishTimeout == 0 {
		cfg.PublishTimeout = 5 * time.Second
	}
	if cfg.WriteRounds == 0 {
		cfg.WriteRounds = 16
	}
	if cfg.Generation == 0 {
		cfg.Generation = 1
	}
	if cfg.DeferralGrace == 0 {
		cfg.DeferralGrace = DefaultDeferralGrace
	}
	if cfg.FormatVersion == 0 {
		cfg.FormatVersion = record.FormatVersion
	}
	r := &Replica{
		cfg:     cfg,
		domain:  cfg.Domain.Name(),
		stream:  cfg.Log.Stream(),
		log:     cfg.Logger.With(engine.LogComponent, engine.ComponentStatelog, engine.LogDomain, string(cfg.Domain.Name())),
		done:    make(chan struct{}),
		closing: make(chan struct{}),
		appends: newAppendsUnderWay(),
		stmts:   sqlite.NewStatements(cfg.DB),
		anchors: movedAnchors{},
	}
	r.answerer, _ = cfg.Domain.(Answerer)
	r.format, r.kinds = cfg.FormatVersion, cfg.Domain.Kinds()
	// The framework's gates (those a reanchor adds come first), then the
	// writer's eviction, then the domain's own (the object's marker).
	r.gates = append(r.gates, generationGate{r: r, name: GateAbandoned}, generationGate{r: r, name: GateOvertaken})
	r.gates = append(r.gates, cfg.Gates...)
	r.gates = append(r.gates, evictionGate{domain: cfg.Domain.Name(), some: &r.evictions})
	if gd, ok := cfg.Domain.(GatedDomain); ok {
		r.gates = append(r.gates, gd.Gates()...)
		r.gateKinds = gd.GateKinds()
	}
	for _, g := range r.gates {
		cfg.Metrics.KnowGate(g.Name())
	}
	if err := r.migrate(ctx); err != nil {
		return nil, err
	}
	cp, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.BelowFloor {
		// Held: its rows are to be replaced by a snapshot (Resume).
		r.belowFloor.Store(true)
		close(r.done)
		return r, nil
	}
	if r.WrongLog() != nil {
		// Its log is not its rows' log: no applier until it is
		// re-anchored or its rows are replaced; the node stays up.
		close(r.done)
		return r, nil
	}
	if err := r.start(ctx, cp); err != nil {
		return nil, err
	}
	return r, nil
}

// load reads what the replica keeps in memory from its rows: the
// computed columns' rules (rederived where they differ), the checkpoint
// against the log, the retained records, the eviction standing.
func (r *Replica) load(ctx context.Context) (Checkpoint, error) {
	cfg := r.cfg
	if err := r.rederive(ctx); err != nil {
		return Checkpoint{}, err
	}
	cp, info, err := r.openCheckpoint(ctx)
	if err != nil {
		return Checkpoint{}, err
	}
	r.progress.set(cp.Seq, cp.AppliedThrough)
	if err := r.loadGenerations(ctx, cfg.DB); err != nil {
		return Checkpoint{}, err
	}
	var retained int64
	if err := cfg.DB.QueryRowContext(ctx, `SELECT count(*) FROM statelog_retained WHERE domain = ?`, string(r.domain)).Scan(&retained); err != nil {
		return Checkpoint{}, err
	}
	r.retained.Store(retained)
	if err := r.loadEvicted(ctx); err != nil {
		return Checkpoint{}, err
	}
	var unknown int64
	if err := cfg.DB.QueryRowContext(ctx, `SELECT count(*) FROM statelog_retained WHERE domain = ? AND scope_known = 0`, string(r.domain)).Scan(&unknown); err != nil {
		return Checkpoint{}, err
	}
	r.scopeUnknown.Store(unknown)
	v, unverified := r.judgeLog(ctx, cp, info)
	switch {
	case v != nil:
		// Held on the checkpoint: nothing is applied or released past it.
		r.setWrongLog(v, cp)
	case unverified:
		r.setUnverified(cp, fmt.Errorf("the record at %d could not be read", cp.Seq))
	}
	if retained > 0 && v == nil {
		// A newer build applies what an older one retained before it
		// consumes anything new.
		if cp, err = r.release(ctx, cp); err != nil {
			return Checkpoint{}, err
		}
		r.progress.set(cp.Seq, cp.AppliedThrough)
	}
	r.capacity.observe(info)
	r.logEnd.Store(max(info.LastSeq, cp.Seq))
	r.judgeFloorAtBoot(cp, info)
	return cp, nil
}

// start opens the reader at the checkpoint and runs the applier.
func (r *Replica) start(ctx context.Context, cp Checkpoint) error {
	sub, err := r.cfg.Log.Subscribe(ctx, cp.Seq)
	if err != nil {
		return err
	}
	r.sub = sub
	r.done = make(chan struct{})
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	// The applier's CPU is labelled with its domain, so a profile of a
	// node (crewlet serve --pprof) tells one domain's applies from
	// another's: go tool pprof -tagfocus domain=tracker.
	go pprof.Do(runCtx, pprof.Labels("domain", string(r.domain)), func(ctx context.Context) { r.run(ctx, cp) })
	return nil
}

func (r *Replica) migrate(ctx context.Context) error {
	tx, err := sqlite.BeginWrite(ctx, r.cfg.DB)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, ddl := range []string{Schema, evictionSchema, auditSchema, generationsSchema, ledger.Schema} {
		if _, err := tx.ExecContext(ctx, ddl); err != nil {
			return fmt.Errorf("statelog: schema of %s: %w", r.domain, err)
		}
	}
	if err := addRetainedStoredAt(ctx, tx); err != nil {
		return fmt.Errorf("statelog: schema of %s: %w", r.domain, err)
	}
	// The domain's older layouts are rewritten before its schema runs: the
	// schema may index a column only the current layout has.
	if rl, ok := r.cfg.Domain.(Relayer); ok {
		t0 := time.Now()
		tables, err := rl.Relay(ctx, tx)
		if err != nil {
			return fmt.Errorf("statelog: relay the tables of %s: %w", r.domain, err)
		}
		if len(tables) > 0 {
			r.log.Info(engine.EvTablesRelaid, "tables", strings.Join(tables, ","), "took", time.Since(t0).String())
		}
	}
	if _, err := tx.ExecContext(ctx, r.cfg.Domain.Schema()); err != nil {
		return fmt.Errorf("statelog: schema of %s: %w", r.domain, err)
	}
	return tx.Commit()
}

// leaderWait bounds how long a boot waits for a leader of a log whose
// leaderless member reports an end behind this node's checkpoint.
const leaderWait = 2 * time.Minute

// openCheckpoint reads the log's end and the checkpoint against it. A
// member of a leaderless log answers from its own copy, which is behind
// where it was cut off: a checkpoint past that end says nothing about
// another copy of the stream, so the boot waits for a leader (as it waits
// for the cluster) instead of refusing wrong_stream on a member's word.
func (r *Replica) openCheckpoint(ctx context.Context) (Checkpoint, LogInfo, error) {
	deadline := time.Now().Add(leaderWait)
	said := false
	for {
		info, err := r.cfg.Log.Info(ctx)
		if err != nil && (errors.Is(err, ErrNoAnswer) || errors.Is(err, ErrNoQuorum)) && time.Now().Before(deadline) {
			// A cluster coming back answers "temporarily unavailable"
			// for a moment: ask again within the same wait.
			select {
			case <-ctx.Done():
				return Checkpoint{}, info, fmt.Errorf("statelog: %s went unanswered until the boot's wait ended (last answer: %v): %w", r.stream, err, ctx.Err())
			case <-time.After(250 * time.Millisecond):
			}
			continue
		}
		if err != nil {
			return Checkpoint{}, info, fmt.Errorf("statelog: read %s from the broker: %w", r.stream, err)
		}
		cp, err := r.ensureCheckpoint(ctx, info)
		if err != nil || !info.Leaderless || cp.Seq <= info.LastSeq {
			// A leader's end past the checkpoint, or one behind it, is
			// judged by judgeLog (a broker restored from an older copy).
			return cp, info, err
		}
		err = fmt.Errorf("the %s checkpoint is at %d and the leaderless member that answered ends at %d", r.stream, cp.Seq, info.LastSeq)
		if !said {
			// The boot holds here for up to leaderWait: say why.
			r.log.Warn("statelog_boot_awaits_leader", engine.LogStream, r.stream, engine.LogErr, err.Error(), "wait", leaderWait.String())
			said = true
		}
		if time.Now().After(deadline) {
			return Checkpoint{}, info, engine.Refuse(engine.CodeNoQuorum,
				"%s has had no leader for %v: the member that answered ends at %d, behind this node's checkpoint, and cannot tell a cut-off copy from another stream. Start this node again once a majority of the cluster is up.", r.stream, leaderWait, info.LastSeq)
		}
		select {
		case <-ctx.Done():
			return Checkpoint{}, info, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// ensureCheckpoint reads the domain's checkpoint, creating it at zero keyed
// to the live stream's creation instant on a first boot.
func (r *Replica) ensureCheckpoint(ctx context.Context, info LogInfo) (Checkpoint, error) {
	tx, err := sqlite.BeginWrite(ctx, r.cfg.DB)
	if err != nil {
		return Checkpoint{}, err
	}
	defer tx.Rollback()
	cp, ok, err := readCheckpoint(ctx, tx, r.domain)
	if err != nil {
		return Checkpoint{}, err
	}
	if !ok {
		cp = Checkpoint{Stream: r.stream, Generation: r.cfg.Generation, StreamCreatedAt: info.Created}
		if _, err := tx.ExecContext(ctx, `INSERT INTO statelog_checkpoint(domain, stream, generation, seq, applied_through, stream_created_at, checkpoint_stored_at) VALUES(?,?,?,?,?,?,?)`,
			string(r.domain), cp.Stream, cp.Generation, 0, 0, info.Created.UnixNano(), 0); err != nil {
			return Checkpoint{}, err
		}
		if err := tx.Commit(); err != nil {
			return Checkpoint{}, err
		}
		return cp, nil
	}
	return cp, nil
}

func readCheckpoint(ctx context.Context, q ledger.Querier, domain engine.Domain) (Checkpoint, bool, error) {
	var cp Checkpoint
	var created, stored int64
	err := q.QueryRowContext(ctx, `SELECT stream, generation, seq, applied_through, stream_created_at, checkpoint_stored_at FROM statelog_checkpoint WHERE domain = ?`, string(domain)).
		Scan(&cp.Stream, &cp.Generation, &cp.Seq, &cp.AppliedThrough, &created, &stored)
	if errors.Is(err, sql.ErrNoRows) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, err
	}
	cp.StreamCreatedAt = time.Unix(0, created)
	if stored != 0 {
		cp.CheckpointStoredAt = time.Unix(0, stored)
	}
	return cp, true, nil
}

// Checkpoint reads the domain's checkpoint as committed, through the
// statement cache: every write at an expectation of zero (every create)
// reads it, and parsing the query each time was a tenth of a create's CPU
// at c=1.
func (r *Replica) Checkpoint(ctx context.Context) (Checkpoint, error) {
	cp, _, err := readCheckpoint(ctx, r.stmts, r.domain)
	return cp, err
}

// Prepared reads inside tx through statements prepared once per
// connection (a hot query parsed on every call cost a tenth of a read).
func (r *Replica) Prepared(tx *sql.Tx) Reader { return sqlite.Cached{Tx: tx, S: r.stmts} }

// Domain is the domain this replica applies.
func (r *Replica) Domain() engine.Domain { return r.domain }

// Stream is the stream this replica reads.
func (r *Replica) Stream() string { return r.stream }

// Generation is the generation this node's rows are keyed to.
func (r *Replica) Generation() uint64 { return r.generation() }

// Position turns a sequence on this replica's log into a position.
func (r *Replica) Position(seq uint64) engine.Position {
	return engine.Position{Stream: r.stream, Generation: r.generation(), Seq: seq}
}

// Applied is the checkpoint sequence the applier has committed.
func (r *Replica) Applied() uint64 { s, _ := r.progress.get(); return s }

// WaitApplied blocks until the applier has committed seq or ctx ends.
func (r *Replica) WaitApplied(ctx context.Context, seq uint64) error {
	return r.progress.wait(ctx, seq)
}

// fault returns the error the applier is stuck on once it is past the
// retry budget (or has stopped for good), nil otherwise.
func (r *Replica) fault() error {
	r.faultMu.Lock()
	defer r.faultMu.Unlock()
	if r.stopped != nil {
		return r.stopped
	}
	if r.faulted {
		return r.lastErr
	}
	return nil
}

// ApplyErr is the failure the applier is on now — one it is retrying,
// before the budget or past it, or why it stopped for good — and nil
// while it applies (crewlet retention status names it).
func (r *Replica) ApplyErr() error {
	r.faultMu.Lock()
	defer r.faultMu.Unlock()
	if r.stopped != nil {
		return r.stopped
	}
	return r.lastErr
}

// OrdinaryCeiling is the ceiling this log's ordinary appends are held to
// under the broker's ceiling max (a sixteenth short where the domain
// keeps the gate reserve).
func (r *Replica) OrdinaryCeiling(max int64) int64 { return OrdinaryCeiling(r.cfg.GateReserve, max) }

// Close stops the applier after it has applied what was handed to it, so
// a clean stop leaves the consumer level with the checkpoint. An applier
// stuck retrying is given a short grace and then abandoned mid-batch,
// which loses nothing: the batch was never committed or acknowledged.
func (r *Replica) Close() {
	r.closingOnce.Do(func() { close(r.closing) })
	r.closeMarks()
	r.life.Lock()
	defer r.life.Unlock()
	if r.sub == nil {
		return // held, and never resumed
	}
	r.sub.Stop()
	select {
	case <-r.done:
	case <-time.After(5 * time.Second):
	}
	r.cancel()
	<-r.done
}

// drainRate is this node's measured apply rate in records a second, an
// exponentially weighted average over batches, used to turn a lag in
// records into seconds and a retry hint.
type drainRate struct {
	mu   sync.Mutex
	rate float64 // records per second; 0 = not measured yet
}

func (d *drainRate) observe(records int, took time.Duration) {
	if records == 0 || took <= 0 {
		return
	}
	r := float64(records) / took.Seconds()
	d.mu.Lock()
	if d.rate == 0 {
		d.rate = r
	} else {
		d.rate = 0.8*d.rate + 0.2*r
	}
	d.mu.Unlock()
}

func (d *drainRate) get() float64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rate
}
