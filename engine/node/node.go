package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/duty"
	"github.com/crewlet/crewlet/engine/estate"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/metrics"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/trim"
	"github.com/crewlet/crewlet/engine/turns"
	"github.com/crewlet/crewlet/ledger"
)

// Node is one running data node.
type Node struct {
	cfg    Config
	log    *slog.Logger
	lock   *os.File
	broker *broker.Embedded
	db     *sql.DB
	// checkpoints copies db's WAL back into the file off the commit path.
	checkpoints *sqlite.Checkpointer
	// domains are the domains this node runs, in the order it was given
	// them (Config.Domains): each one's spec, log, replica and service.
	domains []*domain
	beat    *fleet.Register
	trim    *trim.Trimmer
	units   *turns.Units
	duties  *duty.Duties
	// started are the domain services started on this node (Starter).
	started []engine.Starter
	ryw     *turns.Floors
	estate  *estate.Server
	metrics *metrics.Registry
	snaps   snapshots
	stop    chan struct{}
	swept   chan struct{}

	closeOnce sync.Once
	closeErr  error
}

// Open builds and starts a node. It refuses a data directory another
// process holds, a broker syncing otherwise than stream.sync says and a
// stream persisting asynchronously.
func Open(ctx context.Context, cfg Config) (n *Node, err error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = withDefaults(cfg)
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	n = &Node{cfg: cfg, log: cfg.Logger.With(engine.LogComponent, engine.ComponentNode), metrics: metrics.New(), ryw: turns.NewFloors()}
	defer func() {
		if err != nil {
			n.Close()
			n = nil
		}
	}()
	if n.lock, err = lockDir(cfg.DataDir, cfg.Holder); err != nil {
		return n, err
	}
	sync, err := broker.ParseSync(cfg.Stream.Sync)
	if err != nil {
		return n, err
	}
	if cfg.Stream.Type == "nats" {
		n.broker, err = broker.ConnectExternal(ctx, cfg.Stream.URLs, cfg.Name, cfg.Logger)
	} else {
		eo := broker.EmbeddedOptions{ServerName: cfg.Name, StoreDir: cfg.Stream.StoreDir,
			Sync: sync, MaxStore: cfg.Stream.StoreMaxBytes, Logger: cfg.Logger, ClientURL: cfg.Hooks.ClientURL}
		if c := cfg.Stream.Cluster; c.Listen != "" {
			eo.Cluster = &broker.ClusterOptions{Name: c.Name, Listen: c.Listen, Routes: c.Routes, Advertise: c.Advertise}
		}
		if c := cfg.Stream.Client; c.Listen != "" {
			eo.Client = &broker.ClientOptions{Listen: c.Listen, Token: c.Token}
		}
		n.broker, err = broker.StartEmbedded(eo)
	}
	if err != nil {
		return n, err
	}
	if err := n.ensureStreams(ctx); err != nil {
		return n, err
	}
	n.openSnapshots()
	if err := n.adoptIfBelowFloor(ctx); err != nil {
		return n, err
	}
	if n.db, err = sqlite.Open(filepath.Join(cfg.DataDir, sqlite.FileName), cfg.Store.BusyTimeoutSeconds); err != nil {
		return n, err
	}
	sqlite.SetLogger(n.db, cfg.Logger)
	n.checkpoints = sqlite.StartCheckpointer(n.db, sqlite.CheckpointEvery)
	if err := n.openReplicas(ctx); err != nil {
		return n, err
	}
	if err := n.metrics.Register(metrics.NewStateCollector(n.metricsState)); err != nil {
		return n, err
	}
	if n.beat, err = fleet.StartRegister(ctx, fleet.RegisterConfig{JS: n.broker.JS, Node: cfg.Name,
		Replicas: n.replicas(), BucketReplicas: max(cfg.Stream.Replicas, 1), Interval: cfg.HeartbeatInterval,
		Clock: cfg.Clock, Logger: cfg.Logger}); err != nil {
		return n, err
	}
	n.startTrim()
	if err := n.openCoordination(ctx); err != nil {
		return n, err
	}
	if err := n.startSnapshots(); err != nil {
		return n, err
	}
	n.stop, n.swept = make(chan struct{}), make(chan struct{})
	go n.sweepLoop()
	if err := n.startWork(ctx); err != nil {
		return n, err
	}
	syncSays := sync.String()
	if cfg.Stream.Type == "nats" {
		syncSays = "the external servers' own (not checked)"
	}
	n.log.Info("node_started", "node", cfg.Name, "data", cfg.DataDir, "mode", cfg.Mode, "sync", syncSays)
	return n, nil
}

// openUnits opens the units bucket, retrying while a cluster still
// settles: nodes booting together race to create the same R3 bucket, and
// the first attempts can time out while the meta leader places it.
func openUnits(ctx context.Context, js jetstream.JetStream, cfg Config) (*turns.Units, error) {
	wait := cfg.Stream.ClusterWait
	if wait == 0 {
		wait = 2 * time.Minute
	}
	deadline := time.Now().Add(wait)
	for {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		u, err := turns.Open(actx, js, max(cfg.Stream.Replicas, 1), cfg.Clock, cfg.Logger)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) || cfg.Stream.Cluster.Listen == "" && cfg.Stream.Type != "nats" {
			return u, err
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// withDefaults sets every zero field of a validated config to its
// default: the one place the node's defaults are applied.
func withDefaults(cfg Config) Config {
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Name == "" {
		h, err := os.Hostname()
		if err != nil || h == "" {
			h = "crewlet"
		}
		cfg.Name = h
	}
	if cfg.Mode == "" {
		cfg.Mode = ModeNormal
	}
	if cfg.Stream.Type != "nats" && cfg.Stream.Replicas == 0 && cfg.Stream.Cluster.Listen != "" {
		cfg.Stream.Replicas = 3
	}
	if cfg.Stream.StoreDir == "" {
		cfg.Stream.StoreDir = filepath.Join(cfg.DataDir, "stream")
	}
	if cfg.Domains == nil {
		cfg.Domains = Builtin()
	}
	if cfg.Stream.DuplicateWindow == 0 {
		cfg.Stream.DuplicateWindow = DefaultDuplicateWindow
	}
	if cfg.Store.BusyTimeoutSeconds == 0 {
		cfg.Store.BusyTimeoutSeconds = DefaultBusyTimeout
	}
	if cfg.ApplyRetryBudget == 0 {
		cfg.ApplyRetryBudget = DefaultApplyRetryBudget
	}
	if cfg.WriteWait == 0 {
		cfg.WriteWait = DefaultWriteWait
	}
	if cfg.ReadBudget == 0 {
		cfg.ReadBudget = DefaultReadBudget
	}
	if cfg.AckEvery == 0 {
		cfg.AckEvery = DefaultAckEvery
	}
	if cfg.Clock == nil {
		cfg.Clock = engine.SystemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return cfg
}

// SweepInterval is how often the ledger's 30-day sweep runs.
const SweepInterval = time.Hour

// sweepLoop runs the ledger's sweep at boot and every SweepInterval.
func (n *Node) sweepLoop() {
	defer close(n.swept)
	t := time.NewTicker(SweepInterval)
	defer t.Stop()
	for {
		if _, err := n.SweepLedger(context.Background()); err != nil {
			n.log.Warn("ledger_sweep_failed", engine.LogErr, err.Error())
		}
		select {
		case <-n.stop:
			return
		case <-t.C:
		}
	}
}

// SweepLedger deletes ledger rows applied more than 30 days ago (by the
// node's clock) and moves the watermark; it returns the rows deleted.
func (n *Node) SweepLedger(ctx context.Context) (int64, error) {
	deleted, err := ledger.Sweep(ctx, n.db, n.cfg.Clock.Now())
	if deleted > 0 {
		n.log.Info("ledger_swept", "deleted", deleted)
	}
	return deleted, err
}

// Units is the units-of-work register seats derive their ids from.
func (n *Node) Units() *turns.Units { return n.units }

// Name is node.name.
func (n *Node) Name() string { return n.cfg.Name }

// Mode is the mode the node runs in: normal, maintenance or seal.
func (n *Node) Mode() string { return n.cfg.Mode }

// Broker is the embedded broker (tests stop it to inject faults).
func (n *Node) Broker() *broker.Embedded { return n.broker }

// startTrim runs the retention trim on every log the node runs (never a
// compacted stream, whose one value per subject a purge would lose).
func (n *Node) startTrim() {
	var targets []trim.Target
	for _, d := range n.domains {
		if !d.spec.Compacted {
			targets = append(targets, trim.Target{Replica: d.replica, Log: d.log})
		}
	}
	backups := n.cfg.Trim.Backups
	if backups == nil {
		backups = n.snaps.repo // the backup gate reads the node's own repository
	}
	n.trim = trim.New(trim.Config{Node: n.cfg.Name, Targets: targets, Register: n.beat.KV(), Floors: n.beat.Floors(),
		Backups: backups, MinAge: n.cfg.Trim.MinAge, Interval: n.cfg.Trim.Interval, Clock: n.cfg.Clock, Logger: n.cfg.Logger})
	n.trim.Start()
}

// Trim is the node's retention trim (tests run it once on demand).
func (n *Node) Trim() *trim.Trimmer { return n.trim }

// Register is the node's heartbeat in the positions register.
func (n *Node) Register() *fleet.Register { return n.beat }

// NodeGates evicts and readmits nodes of the fleet (operator only).
func (n *Node) NodeGates() *statelog.NodeGates {
	return &statelog.NodeGates{Replicas: n.replicas(), Clock: n.cfg.Clock}
}

// Retention builds the retention answer from this node.
func (n *Node) Retention() *fleet.Status {
	logs := map[engine.Domain]statelog.Log{}
	for _, d := range n.domains {
		logs[d.spec.Name()] = d.log
	}
	return &fleet.Status{Node: n.cfg.Name, KV: n.beat.KV(), Replicas: n.replicas(), Logs: logs, Floors: n.beat.Floors(), Clock: n.cfg.Clock, Known: n.beat.Known,
		ReaderLead: n.readerLead, Duties: n.dutyHolders, Seats: n.seatsAnswer}
}

// readerLead reads who leads node's consumer on domain's log.
func (n *Node) readerLead(ctx context.Context, domain engine.Domain, node string) (string, time.Time, error) {
	d := n.find(domain)
	if d == nil {
		return "", time.Time{}, fmt.Errorf("node: no %s log", domain)
	}
	lead, err := d.log.ReaderLead(ctx, node)
	return lead.Leader, lead.Since, err
}

// ServeEstate answers calls from nodes without the data role through h
// (the operator surface's message handler) until Close, while this
// node's copy is in service.
func (n *Node) ServeEstate(h estate.Handler) error {
	if n.estate != nil {
		return errors.New("node: the estate is served already")
	}
	s, err := estate.Serve(estate.ServerConfig{Conn: n.broker.Conn, Node: n.cfg.Name,
		Standing: n.OutOfService, Handle: h, Logger: n.cfg.Logger})
	if err != nil {
		return fmt.Errorf("node: serve the estate: %w", err)
	}
	n.estate = s
	return nil
}

// NextHolder is where this node's seats send a call it refused in a way
// that proves it ran nowhere here: the estate's other data nodes, never
// this one.
func (n *Node) NextHolder() *estate.Client {
	c := estate.NewClient(n.broker.Conn, n.cfg.Logger)
	c.Exclude(n.cfg.Name)
	return c
}

// OutOfService says why this node's copy cannot serve the estate, nil
// while it can: the copy of a domain that decides it (Spec.Estate: the
// tracker's, the knowledge base's) is stalled, stopped, evicted, or
// otherwise refuses for what it is.
func (n *Node) OutOfService() *engine.Refusal {
	for _, d := range n.domains {
		if !d.spec.Estate || d.replica == nil {
			continue
		}
		if ref := d.replica.OutOfService(); ref != nil {
			return ref
		}
	}
	return nil
}

// Unready says why this node should take no traffic, nil while it
// serves: its copy is out of service (OutOfService, the one rule the
// estate moves calls by), or it runs in a capacity window (maintenance,
// seal), where writes and linearizable reads — every MCP read — refuse.
func (n *Node) Unready() *engine.Refusal {
	if ref := n.OutOfService(); ref != nil {
		if ref.Code == engine.CodeStalled {
			// The one alarm that takes a node out of service: /readyz
			// names it beside the code.
			ref = ref.With("alarm", statelog.AlarmApplierFaulted)
		}
		return ref
	}
	if full, free := n.broker.VolumeFull(); full {
		return engine.Refuse(engine.CodeVolumeFull, "the volume holding this node's broker store (stream.store_dir %s) is full: %d bytes free, under the %d an append keeps free, so every write is refused. Free space on it; nothing else needs doing.", n.cfg.Stream.StoreDir, free, broker.VolumeHeadroom)
	}
	if n.cfg.Mode != ModeNormal {
		return engine.Refuse(engine.CodeMaintenance, "this node runs in mode %s, a capacity window that publishes nothing: writes and linearizable reads refuse until it runs in normal mode again.", n.cfg.Mode).With("mode", n.cfg.Mode)
	}
	return nil
}

// ClientURL is where nodes without data connect (stream.client.listen),
// empty when this node's broker takes no clients from the network.
func (n *Node) ClientURL() string { return n.broker.ClientURL() }

// DB is the replicated database (tests count rows through it).
func (n *Node) DB() *sql.DB { return n.db }

// Close stops the appliers, the broker and the store, in that order.
func (n *Node) Close() error {
	if n == nil {
		return nil
	}
	n.closeOnce.Do(func() { n.closeErr = n.close() })
	return n.closeErr
}

func (n *Node) close() error {
	var errs []error
	if n.estate != nil {
		n.estate.Close()
	}
	// The duties first: each function this node runs stops, and its
	// lease is handed over, while the services it calls still work.
	n.duties.Close()
	n.stopServices()
	n.trim.Close()
	n.closeSnapshots()
	n.beat.Close()
	if n.stop != nil {
		close(n.stop)
		<-n.swept
	}
	for _, d := range n.domains {
		if d.replica != nil {
			d.replica.Close()
		}
	}
	if n.broker != nil {
		n.broker.Close()
	}
	n.checkpoints.Stop()
	if n.db != nil {
		sqlite.SetLogger(n.db, nil)
		errs = append(errs, n.db.Close())
	}
	if n.lock != nil {
		errs = append(errs, n.lock.Close())
	}
	return errors.Join(errs...)
}
