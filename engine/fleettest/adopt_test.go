//go:build integration

package fleettest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
)

// adoptRig is a three-node fleet whose lines are recorded per node, and
// whose n1 corrupts the artefacts it takes while corrupt is set.
type adoptRig struct {
	c       *fleettest.Cluster
	recs    []*enginetest.Recorder
	corrupt atomic.Bool
	// refuse makes n3 skip every donor while set.
	refuse atomic.Bool
	ops    []tracker.ItemWrite // every create that landed, in order
}

func startAdoptRig(t *testing.T) *adoptRig {
	r := &adoptRig{}
	for i := 0; i < 3; i++ {
		r.recs = append(r.recs, enginetest.NewRecorder())
	}
	r.c = fleettest.StartCluster(t, fleettest.Options{Configure: func(i int, cfg *node.Config) {
		cfg.Logger = r.recs[i].Logger()
		cfg.Retention.BackupOff = true
		if i == 2 {
			cfg.Retention.AdoptWait = time.Second
			// Every chunk of a download past the first nanosecond logs
			// its progress, so even a small artefact shows the line.
			cfg.ProgressEvery = 1
			cfg.Hooks.Adopting = func(donor string) error {
				if r.refuse.Load() {
					return fmt.Errorf("the test keeps n3 from %s", donor)
				}
				return nil
			}
		}
		if i == 0 {
			cfg.Hooks.SnapshotArtefact = func(path string) error {
				if !r.corrupt.Load() {
					return nil
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				b[len(b)/2] ^= 0xff
				return os.WriteFile(path, b, 0o600)
			}
		}
	}})
	return r
}

// write files count items through n1.
func (r *adoptRig) write(t *testing.T, count int) {
	t.Helper()
	ctx := context.Background()
	n := r.c.Node(0)
	if len(r.ops) == 0 {
		if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < count; i++ {
		w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("item %d", len(r.ops))})
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
		r.ops = append(r.ops, w)
	}
}

// trim removes the start of the tracker log with the broker's own purge,
// up to (not including) its last record, and returns the first sequence.
func (r *adoptRig) trim(t *testing.T) uint64 {
	t.Helper()
	ctx := context.Background()
	s, err := r.c.Node(0).Broker().JS.Stream(ctx, "CREWLET_TRACKER_LOG")
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSequence(info.State.LastSeq)); err != nil {
		t.Fatal(err)
	}
	info, err = s.Info(ctx)
	if err != nil || info.State.FirstSeq != info.State.LastSeq {
		t.Fatalf("after the purge the log holds %+v (%v)", info.State, err)
	}
	return info.State.FirstSeq
}

// converged waits until every node has applied the log and hashes alike.
func (r *adoptRig) converged(t *testing.T) {
	t.Helper()
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		return fleettest.Converged(context.Background(), r.c)
	})
}

// adopted checks n3 adopted (statelog_adopted) a snapshot the donor says
// it sent to it, with the same sha256, and returns the donor. n3 boots
// with a one-second adoption wait: where the donation takes longer (a
// refused artefact first, a loaded machine) it opens held and adopts in
// the background, so the line is waited for, as converged waits.
func (r *adoptRig) adopted(t *testing.T, since int) string {
	t.Helper()
	var lines []enginetest.Line
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		if lines = r.recs[2].Lines(snapshot.EvAdopted); len(lines) <= since {
			return fmt.Errorf("n3 logged %d statelog_adopted lines, want more than %d", len(lines), since)
		}
		return nil
	})
	a := lines[len(lines)-1].Attrs
	donor, _ := a["donor"].(string)
	var idx int
	if _, err := fmt.Sscanf(donor, "n%d", &idx); err != nil || idx < 1 || idx > 2 {
		t.Fatalf("adopted from %q: %v", donor, a)
	}
	downloaded(t, r.recs[2], a)
	for _, s := range r.recs[idx-1].Lines(snapshot.EvSnapshotSent) {
		if s.Attrs["sha256"] == a["sha256"] && s.Attrs["to"] == "n3" && s.Attrs["component"] == engine.ComponentStatelog {
			return donor
		}
	}
	t.Fatalf("%s logged no statelog_snapshot_sent to n3 with sha256 %v", donor, a["sha256"])
	return ""
}

// downloaded checks n3 logged the download of the artefact it adopted
// (adopted, its statelog_adopted attributes): statelog_adopt_progress
// lines of component statelog naming it, the bytes growing to its size,
// the last one at 100 %.
func downloaded(t *testing.T, rec *enginetest.Recorder, adopted map[string]any) {
	t.Helper()
	var prev float64
	var last map[string]any
	for _, l := range rec.Lines(snapshot.EvAdoptProgress) {
		if l.Attrs["name"] != adopted["name"] {
			continue
		}
		if l.Attrs["component"] != engine.ComponentStatelog || l.Attrs["donor"] != adopted["donor"] {
			t.Errorf("progress line %v", l.Attrs)
		}
		var done float64
		if _, err := fmt.Sscan(fmt.Sprint(l.Attrs["bytes_done"]), &done); err != nil || done < prev {
			t.Errorf("bytes_done went back from %v: %v", prev, l.Attrs)
		}
		prev, last = done, l.Attrs
	}
	if last == nil {
		t.Fatalf("n3 logged no %s for %v", snapshot.EvAdoptProgress, adopted["name"])
	}
	size := fmt.Sprint(adopted["size"])
	if fmt.Sprint(last["bytes_total"]) != size || fmt.Sprint(last["bytes_done"]) != size || fmt.Sprint(last["percent"]) != "100" {
		t.Errorf("the last progress line %v, want every byte of %v (100 %%)", last, adopted["size"])
	}
}

// reboot stops n3, lets run happen while it is down, and starts it again.
func (r *adoptRig) reboot(t *testing.T, run func()) {
	t.Helper()
	r.c.Stop(2)
	run()
	if err := r.c.Start(2); err != nil {
		t.Fatalf("restart n3: %v", err)
	}
}

// TestAdoptBelowTheFloor: a stopped node the trim passed adopts a peer's
// snapshot on its own and converges; a node started on an empty database
// after the trim does the same; a corrupt artefact is refused and another
// donor's adopted. Nothing is lost and nothing applied twice: every item
// is there once, and a retry of an operation from before the stop is
// answered from the ledger that travelled inside the snapshot.
func TestAdoptBelowTheFloor(t *testing.T) {
	r := startAdoptRig(t)
	r.write(t, 10)
	r.converged(t)

	r.reboot(t, func() {
		r.write(t, 20)
		r.trim(t)
		// The donors' rows say they were derived under other rules (a
		// donor on another build): the adopter recomputes them once.
		for i := 0; i < 2; i++ {
			if _, err := r.c.Node(i).DB().Exec(`UPDATE statelog_rules SET version = 0 WHERE domain = 'tracker'`); err != nil {
				t.Fatal(err)
			}
		}
	})
	r.adopted(t, 0)
	rebuiltBehind(t, r.recs[2])
	rederived(t, r.recs[2])
	for i := 0; i < 2; i++ { // the donors' own rows are as they were
		if _, err := r.c.Node(i).DB().Exec(`UPDATE statelog_rules SET version = ? WHERE domain = 'tracker'`, trackapply.RulesVersion); err != nil {
			t.Fatal(err)
		}
	}
	r.write(t, 3)
	r.converged(t)
	r.nothingLostNothingTwice(t)

	// A fresh database: the broker store stays, the rows are gone.
	r.reboot(t, func() {
		r.write(t, 5)
		r.trim(t)
		removeDB(t, r.c.Config(2).DataDir)
	})
	r.adopted(t, 1)
	r.write(t, 2)
	r.converged(t)
	r.nothingLostNothingTwice(t)

	// n1 corrupts what it donates: n3 refuses it and adopts n2's.
	r.corrupt.Store(true)
	r.reboot(t, func() { r.write(t, 4); r.trim(t) })
	if got := r.adopted(t, 2); got != "n2" {
		t.Fatalf("adopted from %s, want n2 after n1's corrupt artefact", got)
	}
	refused := r.recs[2].Lines(snapshot.EvSnapshotRefused)
	if len(refused) == 0 || refused[0].Attrs["donor"] != "n1" {
		t.Fatalf("n3 refused %v, want n1's corrupt artefact", refused)
	}
	r.write(t, 1)
	r.converged(t)
	r.nothingLostNothingTwice(t)
	r.corrupt.Store(false)

	// No donor answers in time: n3 opens held, its reads and writes
	// refuse below_floor, and both clear on their own once it adopts; the
	// rows it adopts are relaid into this build's layouts, and still
	// converge with the donors' in the older ones.
	r.refuse.Store(true)
	r.reboot(t, func() { r.write(t, 3); r.trim(t) })
	refusesBelowFloor(t, r.c.Node(2))
	r.olderDonors(t)
	r.refuse.Store(false)
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		_, err := r.c.Node(2).Tracker().GetWorkItem(context.Background(), engine.ReadOptions{Level: engine.Linearizable}, "ENG-1")
		return err
	})
	r.adopted(t, 3)
	rebuiltBehind(t, r.recs[2])
	logged(t, r.recs[2], engine.EvTablesRelaid, "of the adopted rows", func(a map[string]any) bool {
		return a[engine.LogDomain] == string(engine.DomainTracker) && a["tables"] == "tracker_items,tracker_history"
	})
	r.converged(t) // n3's relaid rows hash as the donors' in the older layouts
	r.upgradeDonors(t)
	r.write(t, 1)
	r.converged(t)
	r.nothingLostNothingTwice(t)
}

// olderDonors puts n1's and n2's tracker_items and tracker_history in the
// layouts of builds before either was relaid, as on nodes of such a
// build: a snapshot either takes carries them, and the replica of a node
// that restores one into its open database relays them as it resumes.
func (r *adoptRig) olderDonors(t *testing.T) {
	t.Helper()
	for i := 0; i < 2; i++ {
		if err := enginetest.OlderHistoryLayout(context.Background(), r.c.Node(i).DB(), true); err != nil {
			t.Fatalf("n%d: %v", i+1, err)
		}
	}
}

// upgradeDonors relays n1's and n2's tables as this build's open does
// (their build upgraded): this build writes history rows only in its own
// layout, so the donors take no record in the older one.
func (r *adoptRig) upgradeDonors(t *testing.T) {
	t.Helper()
	for i := 0; i < 2; i++ {
		db := r.c.Node(i).DB()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (trackapply.Domain{}).Relay(context.Background(), tx); err != nil {
			t.Fatalf("n%d: %v", i+1, err)
		}
		if _, err := tx.Exec(trackapply.Domain{}.Schema()); err != nil {
			t.Fatalf("n%d: %v", i+1, err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
}

// refusesBelowFloor: a read and a write on n refuse below_floor.
func refusesBelowFloor(t *testing.T, n *node.Node) {
	t.Helper()
	ctx := context.Background()
	_, err := n.Tracker().GetWorkItem(ctx, engine.ReadOptions{Level: engine.Stale}, "ENG-1")
	if engine.CodeOf(err) != engine.CodeBelowFloor {
		t.Fatalf("a read on a held node: %v, want below_floor", err)
	}
	_, err = n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "held"})
	if engine.CodeOf(err) != engine.CodeBelowFloor {
		t.Fatalf("a write on a held node: %v, want below_floor", err)
	}
	if ref := n.Unready(); ref == nil || ref.Code != engine.CodeBelowFloor {
		t.Fatalf("a held node is ready: %v", ref)
	}
}

func removeDB(t testing.TB, dir string) {
	t.Helper()
	for _, f := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(filepath.Join(dir, sqlite.FileName+f)); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
}

// rederived: the adopter recomputed the tracker's computed columns from
// the donor's rules version (0) to this build's, before applying anything.
func rederived(t *testing.T, rec *enginetest.Recorder) {
	t.Helper()
	logged(t, rec, engine.EvRederived, "of the tracker from 0", func(a map[string]any) bool {
		return a[engine.LogDomain] == string(engine.DomainTracker) && fmt.Sprint(a["from"]) == "0" && fmt.Sprint(a["to"]) == fmt.Sprint(trackapply.RulesVersion)
	})
}

// logged waits, as adopted does, for a line msg whose attributes match:
// an adoption in the background resumes the replicas after it is logged.
func logged(t *testing.T, rec *enginetest.Recorder, msg, what string, match func(map[string]any) bool) {
	t.Helper()
	enginetest.CheckFor(t, time.Minute, 100*time.Millisecond, func() error {
		for _, l := range rec.Lines(msg) {
			if match(l.Attrs) {
				return nil
			}
		}
		return fmt.Errorf("no %s %s: %v", msg, what, rec.Lines(msg))
	})
}

// rebuiltBehind: the adopter's reader was rebuilt at the new checkpoint.
func rebuiltBehind(t *testing.T, rec *enginetest.Recorder) {
	t.Helper()
	logged(t, rec, engine.EvConsumerRebuilt, "with drift behind_checkpoint", func(a map[string]any) bool {
		return a["drift"] == "behind_checkpoint" && a[engine.LogDomain] == string(engine.DomainTracker)
	})
}

// nothingLostNothingTwice: n3 holds every item once, and retrying the
// oldest create on n3 under its op id answers the first copy's item at
// its position (the ledger came with the snapshot).
func (r *adoptRig) nothingLostNothingTwice(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	n3 := r.c.Node(2)
	var items int
	if err := n3.DB().QueryRowContext(ctx, `SELECT count(*) FROM tracker_items`).Scan(&items); err != nil {
		t.Fatal(err)
	}
	if items != len(r.ops) {
		t.Fatalf("n3 holds %d items, %d were created", items, len(r.ops))
	}
	// The first create filed ENG-1 (its answer may have been pending,
	// with no item in it).
	first := r.ops[0]
	again, err := n3.Tracker().CreateWorkItem(ctx, engine.WriteOptions{OpID: first.OpID}, tracker.NewWorkItem{Project: "ENG", Title: "item 0"})
	if err != nil || again.Outcome != engine.Applied || again.Position != first.Position || again.Item == nil || again.Item.Key != "ENG-1" {
		t.Fatalf("retry on n3: %+v %v, want applied at %s as ENG-1", again.WriteResult, err, first.Position)
	}
}
