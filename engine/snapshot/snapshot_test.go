package snapshot_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/snapshot"
	"github.com/crewlet/crewlet/engine/tracker"
)

// fill files count work items in project ENG on n.
func fill(t testing.TB, n *node.Node, from, count int) {
	t.Helper()
	ctx := context.Background()
	if from == 0 {
		if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
			t.Fatal(err)
		}
	}
	for i := from; i < from+count; i++ {
		w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("item %d", i), Tags: []string{"t"}})
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
	}
}

func openNode(t *testing.T, dir string) *node.Node {
	return enginetest.OpenNode(t, node.Config{Retention: node.RetentionConfig{SnapshotDir: dir, BackupOff: true}})
}

// A backup lands whole in the repository, Reached names the checkpoint it
// covers, and verify-restore restores it and finds every table equal to
// the live copy at that checkpoint — hashed again while the live copy has
// not moved, and from the manifest's hashes once it has.
func TestBackupVerifyRestore(t *testing.T) {
	for _, repo := range []string{"objectstore", "dir"} {
		t.Run(repo, func(t *testing.T) {
			dir := ""
			if repo == "dir" {
				dir = t.TempDir()
			}
			n := openNode(t, dir)
			fill(t, n, 0, 20)
			ctx := context.Background()
			m, err := n.Backup(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			applied := n.Replica(engine.DomainTracker).Applied()
			if got := m.Domains[string(engine.DomainTracker)].Seq; got != applied {
				t.Fatalf("manifest's tracker checkpoint %d, applied %d", got, applied)
			}
			reached, err := n.SnapshotRepository().Reached(ctx)
			if err != nil || reached[string(engine.DomainTracker)] != applied {
				t.Fatalf("Reached = %v, %v; want tracker %d", reached, err, applied)
			}
			r, err := n.VerifyRestore(ctx)
			if err != nil || !r.OK || !r.LiveNow || r.Tables == 0 {
				t.Fatalf("verify-restore: %+v %v", r, err)
			}
			fill(t, n, 20, 3)
			r, err = n.VerifyRestore(ctx)
			if err != nil || !r.OK || r.LiveNow {
				t.Fatalf("verify-restore after the live copy moved: %+v %v", r, err)
			}
		})
	}
}

// The repository keeps the newest artefact per node and the one before.
func TestKeepsNewestTwo(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, dir)
	fill(t, n, 0, 2)
	ctx := context.Background()
	var names []string
	for i := 0; i < 3; i++ {
		fill(t, n, 2+i, 1)
		m, err := n.Backup(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, m.Name)
	}
	ms, err := n.SnapshotRepository().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 2 || ms[0].Name != names[2] || ms[1].Name != names[1] {
		t.Fatalf("kept %+v, want the newest two of %v", ms, names)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if len(files) != 2 {
		t.Fatalf("%d artefact files in the directory, want 2: %v", len(files), files)
	}
}

// An artefact whose bytes no longer hash to its manifest is refused.
func TestCorruptArtefactRefused(t *testing.T) {
	dir := t.TempDir()
	n := openNode(t, dir)
	fill(t, n, 0, 5)
	ctx := context.Background()
	if _, err := n.Backup(ctx, nil); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if len(files) != 1 {
		t.Fatalf("artefacts: %v", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(files[0], b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = n.VerifyRestore(ctx)
	var ce *snapshot.CorruptError
	if !errors.As(err, &ce) {
		t.Fatalf("verify-restore of a corrupt artefact: %v, want a CorruptError", err)
	}
}

// A backup taken while writes land is one instant: the restored copy
// equals the live copy's hashes taken in the copy's own transaction, and
// its checkpoint is the one the manifest names.
func TestBackupUnderWrites(t *testing.T) {
	n := openNode(t, t.TempDir())
	fill(t, n, 0, 5)
	ctx := context.Background()
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 5; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprintf("item %d", i)})
		}
	}()
	seen := map[uint64]bool{}
	for i := 0; i < 6; i++ {
		m, err := n.Backup(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		seen[m.Domains[string(engine.DomainTracker)].Seq] = true
		r, err := n.VerifyRestore(ctx)
		if err != nil || r.Integrity != "ok" || len(r.Mismatched) != 0 || r.Snapshot.Name != m.Name {
			t.Fatalf("verify-restore of a backup taken under writes: %+v %v", r, err)
		}
	}
	close(stop)
	<-done
	if len(seen) < 2 {
		t.Logf("every backup saw the same checkpoint: the writer was slower than the backups")
	}
}

// The schedule takes backups on its own, every retention.backup_interval.
func TestBackupSchedule(t *testing.T) {
	dir := t.TempDir()
	n := enginetest.OpenNode(t, node.Config{Retention: node.RetentionConfig{SnapshotDir: dir, BackupInterval: 100 * time.Millisecond}})
	fill(t, n, 0, 2)
	applied := n.Replica(engine.DomainTracker).Applied()
	enginetest.CheckFor(t, time.Minute, 50*time.Millisecond, func() error {
		reached, err := n.SnapshotRepository().Reached(context.Background())
		if err != nil {
			return err
		}
		if got := reached[string(engine.DomainTracker)]; got < applied {
			return fmt.Errorf("the scheduled backups reached %d, the tracker is at %d", got, applied)
		}
		return nil
	})
}
