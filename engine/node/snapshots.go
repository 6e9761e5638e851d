package node

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
)

// DefaultBackupInterval is retention.backup_interval's default. The
// backup gate holds the trim at what the newest snapshots reached, so the
// interval is how far the gate may hold the trim behind the other terms:
// six hours of records is a small fraction of a log's ceiling on a work
// tracker, and with the newest two artefacts kept per node the repository
// still reaches back twelve hours per node. A snapshot of 100 000 items
// takes seconds and holds no writer, so four a day cost nothing.
const DefaultBackupInterval = 6 * time.Hour

// DefaultAdoptWait bounds how long a boot below the floor asks the fleet
// for a snapshot before the node opens anyway, held: its reads and writes
// refuse below_floor while it goes on asking in the background
// (adoptLoop), and serve again on their own once it has adopted one.
const DefaultAdoptWait = 10 * time.Second

// adoptRetry is how often a held node asks the fleet again.
const adoptRetry = 2 * time.Second

// RetentionConfig is the retention.* block this package reads.
type RetentionConfig struct {
	// BackupInterval is retention.backup_interval: how often the node
	// takes a snapshot into its repository (0: DefaultBackupInterval;
	// BackupOff: never on a schedule).
	BackupInterval time.Duration
	BackupOff      bool
	// SnapshotDir is retention.snapshot_dir: a directory repository in
	// place of the broker's object store.
	SnapshotDir string
	// AdoptWait: DefaultAdoptWait when 0.
	AdoptWait time.Duration
}

// snapshots is the node's snapshotter: its repository, the broker's object
// store donations travel through, the donor and the schedule.
type snapshots struct {
	repo   snapshot.Repository
	store  *snapshot.ObjectStore
	donor  *snapshot.Donor
	mu     sync.Mutex // one snapshot at a time
	stop   chan struct{}
	done   chan struct{}
	closed sync.Once
	// held says the boot found the node below the floor and no peer
	// donated in time: the replicas open held, and adoptLoop (adopted
	// closes when it ends) goes on asking.
	held    bool
	adopted chan struct{}
	// running is the take under way, or the last one, for
	// GET /api/v1/progress.
	running snapshot.Running
}

func (n *Node) openSnapshots() {
	n.snaps.running.Node = n.cfg.Name
	n.snaps.store = snapshot.NewObjectStore(n.broker.JS, max(n.cfg.Stream.Replicas, 1))
	n.snaps.repo = n.snaps.store
	if d := n.cfg.Retention.SnapshotDir; d != "" {
		n.snaps.repo = snapshot.Dir{Path: d}
	}
	// An artefact a killed process left half written is nobody's.
	for _, pat := range []string{"snapshot-*.db", sqlite.FileName + ".adopting"} {
		old, _ := filepath.Glob(filepath.Join(n.cfg.DataDir, pat))
		for _, f := range old {
			os.Remove(f)
		}
	}
}

// SnapshotRepository is where this node's backups go.
func (n *Node) SnapshotRepository() snapshot.Repository { return n.snaps.repo }

// Backup takes a snapshot of the replicated database into the node's
// repository, telling progress how far the copy has come.
func (n *Node) Backup(ctx context.Context, progress snapshot.Progress) (snapshot.Manifest, error) {
	return n.takeInto(ctx, n.snaps.repo, true, progress)
}

// takeInto takes a snapshot and puts it in repo, logging progress on long
// copies (statelog_snapshot_progress) and statelog_snapshot_taken.
func (n *Node) takeInto(ctx context.Context, repo snapshot.Repository, hashes bool, progress snapshot.Progress) (m snapshot.Manifest, err error) {
	n.snaps.mu.Lock()
	defer n.snaps.mu.Unlock()
	log := n.cfg.Logger.With(engine.LogComponent, engine.ComponentStatelog)
	start := time.Now()
	run := &n.snaps.running
	run.Start(start.UTC())
	defer func() { run.End(time.Now().UTC(), err) }()
	lastLog := start
	report := func(done, total int64) {
		if now := time.Now(); now.Sub(lastLog) >= 2*time.Second {
			lastLog = now
			log.Info(snapshot.EvSnapshotProgress, "done_pages", done, "total_pages", total, "percent", percent(done, total))
		}
		run.Step(done, total)
		if progress != nil {
			progress(done, total)
		}
	}
	path, m, err := snapshot.Take(ctx, n.db, n.cfg.DataDir, snapshot.TakeOptions{Donor: n.cfg.Name, Now: n.cfg.Clock.Now(), Hashes: hashes, Progress: report})
	if err != nil {
		return m, err
	}
	defer os.Remove(path)
	run.Storing(m.Name)
	if h := n.cfg.Hooks.SnapshotArtefact; h != nil {
		if err := h(path); err != nil {
			return m, err
		}
	}
	if err := repo.Put(ctx, m, path); err != nil {
		return m, err
	}
	log.Info(snapshot.EvSnapshotTaken, "name", m.Name, "sha256", m.SHA256, "taken_at", m.TakenAt, "size", m.Size,
		"where", repo.Where(), "took", time.Since(start).String())
	return m, nil
}

// BackupProgress is GET /api/v1/progress: the snapshot take under way on
// this node, or its last one.
func (n *Node) BackupProgress() *snapshot.Running {
	return &n.snaps.running
}

func percent(done, total int64) int64 {
	if total <= 0 {
		return 100
	}
	return done * 100 / total
}

// ParseBackupInterval reads retention.backup_interval: "off", or a
// positive Go duration ("6h"); empty is the default.
func ParseBackupInterval(s string) (every time.Duration, off bool, err error) {
	switch s {
	case "":
		return 0, false, nil
	case "off":
		return 0, true, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, false, &engine.ConfigError{Field: "retention.backup_interval", Value: s, Reason: "is neither \"off\" nor a positive duration such as \"6h\""}
	}
	return d, false, nil
}

// VerifyRestore restores the newest snapshot of the node's repository into
// a scratch database and compares it with the live copy at the same
// checkpoint (snapshot.VerifyRestore).
func (n *Node) VerifyRestore(ctx context.Context) (snapshot.Report, error) {
	return snapshot.VerifyRestore(ctx, n.snaps.repo, n.db, n.cfg.DataDir)
}

// backupLoop takes a snapshot every retention.backup_interval.
func (n *Node) backupLoop() {
	defer close(n.snaps.done)
	every := n.cfg.Retention.BackupInterval
	if every == 0 {
		every = DefaultBackupInterval
	}
	t := time.NewTicker(every)
	defer t.Stop()
	log := n.cfg.Logger.With(engine.LogComponent, engine.ComponentStatelog)
	for {
		select {
		case <-n.snaps.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-n.snaps.stop:
				cancel()
			case <-ctx.Done():
			}
		}()
		if _, err := n.Backup(ctx, nil); err != nil && ctx.Err() == nil {
			log.Warn("statelog_backup_failed", engine.LogErr, err.Error(), "where", n.snaps.repo.Where())
		}
		cancel()
	}
}

// startSnapshots serves donations and starts the backup schedule, once the
// replicas are open.
func (n *Node) startSnapshots() error {
	d, err := snapshot.Serve(snapshot.DonorConfig{Conn: n.broker.Conn, Node: n.cfg.Name, Logger: n.cfg.Logger,
		Offer: n.offer, Donate: n.donate})
	if err != nil {
		return fmt.Errorf("node: serve snapshot donations: %w", err)
	}
	n.snaps.donor = d
	n.snaps.stop, n.snaps.done, n.snaps.adopted = make(chan struct{}), make(chan struct{}), make(chan struct{})
	if n.cfg.Retention.BackupOff {
		close(n.snaps.done)
	} else {
		go n.backupLoop()
	}
	if n.snaps.held {
		go n.adoptLoop()
	} else {
		close(n.snaps.adopted)
	}
	return nil
}

func (n *Node) closeSnapshots() {
	n.snaps.closed.Do(func() {
		n.snaps.donor.Close()
		if n.snaps.stop != nil {
			close(n.snaps.stop)
			<-n.snaps.done
			<-n.snaps.adopted
		}
	})
}

// offer is this node's checkpoints, offered while its copy is in service.
func (n *Node) offer(ctx context.Context) (snapshot.Offer, bool) {
	if n.OutOfService() != nil {
		return snapshot.Offer{}, false
	}
	o := snapshot.Offer{Node: n.cfg.Name, Domains: map[string]snapshot.Point{}}
	for _, d := range n.domains {
		if d.replica == nil {
			return o, false
		}
		cp, err := d.replica.Checkpoint(ctx)
		if err != nil {
			return o, false
		}
		o.Domains[string(d.spec.Name())] = snapshot.Point{Stream: cp.Stream, StreamCreatedAt: cp.StreamCreatedAt.UTC(),
			Generation: cp.Generation, Seq: cp.Seq, AppliedThrough: cp.AppliedThrough}
	}
	return o, true
}

// donate takes a fresh snapshot for a peer into the broker's object store
// (the one repository both nodes read) and logs statelog_snapshot_sent.
func (n *Node) donate(ctx context.Context, to string) (snapshot.Manifest, error) {
	m, err := n.takeInto(ctx, n.snaps.store, false, nil)
	if err != nil {
		return m, err
	}
	n.cfg.Logger.Info(snapshot.EvSnapshotSent, engine.LogComponent, engine.ComponentStatelog,
		"sha256", m.SHA256, "taken_at", m.TakenAt, "to", to, "name", m.Name, "size", m.Size)
	return m, nil
}

// adoptIfBelowFloor runs at boot, before the database is opened: where a
// log's first sequence is past this node's checkpoint plus one (the trim
// removed records it never applied, or it starts empty on a trimmed log),
// it adopts a peer's snapshot (snapshot.Adopt) in place of its database.
func (n *Node) adoptIfBelowFloor(ctx context.Context) error {
	path := filepath.Join(n.cfg.DataDir, sqlite.FileName)
	have, err := snapshot.Checkpointed(ctx, path, n.cfg.Store.BusyTimeoutSeconds)
	if err != nil {
		return fmt.Errorf("node: read the checkpoints before boot: %w", err)
	}
	floors := map[string]snapshot.Floor{}
	var below []string
	for _, d := range n.domains {
		if d.spec.Compacted {
			continue // a compacted log's gaps are coverage, not a hole
		}
		info, err := firstSeq(ctx, d)
		if err != nil {
			return fmt.Errorf("node: read %s's first sequence: %w", d.spec.Stream, err)
		}
		name := string(d.spec.Name())
		floors[name] = snapshot.Floor{FirstSeq: info.FirstSeq, Created: info.Created.UTC()}
		if cp := have[name]; info.FirstSeq > cp.Seq+1 {
			below = append(below, fmt.Sprintf("%s (checkpoint %d, first sequence %d)", name, cp.Seq, info.FirstSeq))
		}
	}
	if len(below) == 0 {
		return nil
	}
	sort.Strings(below)
	n.cfg.Logger.Warn(snapshot.EvBelowTheFloor, engine.LogComponent, engine.ComponentEngine, "domains", strings.Join(below, ", "))
	n.behindAReanchor(ctx, have)
	wait := n.cfg.Retention.AdoptWait
	if wait == 0 {
		wait = DefaultAdoptWait
	}
	_, err = snapshot.Adopt(ctx, snapshot.AdoptConfig{Conn: n.broker.Conn, Node: n.cfg.Name, Repo: n.snaps.store,
		Floors: floors, DBPath: path, Wait: wait, Logger: n.cfg.Logger, Hook: n.cfg.Hooks.Adopting, ProgressEvery: n.cfg.ProgressEvery})
	if err != nil {
		// Open anyway, held: reads and writes refuse below_floor, and the
		// node goes on asking (adoptLoop).
		n.cfg.Logger.Warn(snapshot.EvBelowTheFloor, engine.LogComponent, engine.ComponentEngine, "domains", strings.Join(below, ", "),
			"held", true, engine.LogErr, err.Error())
		n.snaps.held = true
	}
	return nil
}

// behindAReanchor writes statelog_behind_a_reanchor where the boot asks
// the fleet for a snapshot because a peer re-anchored a log past this
// node's generation: the positions register shows a peer on the same
// stream in a later generation than this node's checkpoint. The register
// unread says nothing here: the adoption that follows is the same.
func (n *Node) behindAReanchor(ctx context.Context, have map[string]snapshot.Point) {
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	kv, err := n.broker.JS.KeyValue(rctx, fleet.Bucket)
	if err != nil {
		return
	}
	all, err := fleet.ReadAll(rctx, kv)
	if err != nil {
		return
	}
	var domains, gens []string
	for _, d := range n.domains {
		name := string(d.spec.Name())
		cp, ok := have[name]
		if !ok || cp.Generation == 0 {
			continue // nothing of this log here yet: no reanchor to be behind
		}
		top := cp.Generation
		for _, p := range all {
			if p.Node != n.cfg.Name && string(p.Domain) == name && p.Stream == d.spec.Stream {
				top = max(top, p.Generation)
			}
		}
		if top > cp.Generation {
			domains = append(domains, name)
			gens = append(gens, fmt.Sprintf("%s at %d (this node's rows at %d)", name, top, cp.Generation))
		}
	}
	if len(domains) > 0 {
		n.cfg.Logger.Warn(statelog.EvBehindAReanchor, engine.LogComponent, engine.ComponentEngine,
			"domains", strings.Join(domains, ", "), "generations", strings.Join(gens, ", "))
	}
}

// floors reads every log's first sequence and creation instant.
func (n *Node) floors(ctx context.Context) (map[string]snapshot.Floor, error) {
	out := map[string]snapshot.Floor{}
	for _, d := range n.domains {
		if d.spec.Compacted {
			continue
		}
		info, err := d.log.Info(ctx)
		if err != nil {
			return nil, err
		}
		out[string(d.spec.Name())] = snapshot.Floor{FirstSeq: info.FirstSeq, Created: info.Created.UTC()}
	}
	return out, nil
}

// adoptLoop asks the fleet for a snapshot until one is restored into the
// open database and every replica resumed on it, or the node closes.
func (n *Node) adoptLoop() {
	defer close(n.snaps.adopted)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-n.snaps.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	log := n.cfg.Logger.With(engine.LogComponent, engine.ComponentEngine)
	for {
		err := n.adoptHeld(ctx)
		if err == nil || ctx.Err() != nil {
			return
		}
		log.Debug("statelog_adoption_retry", engine.LogErr, err.Error())
		select {
		case <-ctx.Done():
			return
		case <-time.After(adoptRetry):
		}
	}
}

// adoptHeld is one round of a held node's adoption: a donation restored
// into the open database, then every replica resumed on its new rows.
func (n *Node) adoptHeld(ctx context.Context) error {
	floors, err := n.floors(ctx)
	if err != nil {
		return err
	}
	path := filepath.Join(n.cfg.DataDir, sqlite.FileName)
	_, err = snapshot.Adopt(ctx, snapshot.AdoptConfig{Conn: n.broker.Conn, Node: n.cfg.Name, Repo: n.snaps.store,
		Floors: floors, DBPath: path, Logger: n.cfg.Logger, Hook: n.cfg.Hooks.Adopting, ProgressEvery: n.cfg.ProgressEvery,
		Install: func(src string) error { return snapshot.RestoreInto(ctx, n.db, src) }})
	if err != nil {
		return err
	}
	for _, d := range n.domains {
		if d.replica == nil || !d.replica.BelowFloor() {
			continue
		}
		if err := d.replica.Resume(ctx); err != nil {
			n.log.Error("statelog_resume_failed", engine.LogDomain, string(d.spec.Name()), engine.LogErr, err.Error())
			return nil // the rows are the donor's; a restart resumes from them
		}
	}
	return nil
}

// firstSeqWait bounds how long a boot retries reading a log's first
// sequence while a cluster that just restarted elects the log's leader
// (or a member's meta layer has not yet learnt the stream): the same two
// minutes the boot waits for the broker itself.
const firstSeqWait = 2 * time.Minute

// firstSeq reads d's log state, retrying a broker that does not answer
// yet.
func firstSeq(ctx context.Context, d *domain) (statelog.LogInfo, error) {
	deadline := time.Now().Add(firstSeqWait)
	for {
		info, err := d.log.Info(ctx)
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return info, err
		}
		select {
		case <-ctx.Done():
			return info, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}
