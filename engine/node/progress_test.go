package node_test

import (
	"context"
	"errors"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/snapshot"
)

// TestBackupProgressRoute: GET /api/v1/progress shows a backup while it
// runs (held, by the artefact hook, between its copy and its put: every
// page copied, the artefact being stored) and the last one once it ended,
// done with its name or failed with why.
func TestBackupProgressRoute(t *testing.T) {
	ctx := context.Background()
	reached, release := make(chan struct{}), make(chan error)
	// No scheduled backup: the test takes each one itself.
	cfg := node.Config{DataDir: t.TempDir(), Name: "n1", Hooks: node.Hooks{SnapshotArtefact: func(string) error {
		reached <- struct{}{}
		return <-release
	}}}
	cfg.Retention.BackupOff = true
	n := enginetest.OpenNode(t, cfg)
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	if a := progressAnswer(t, n); a.Backup != nil || a.Node != "n1" {
		t.Fatalf("before any backup: %+v", a)
	}
	type result struct {
		m   snapshot.Manifest
		err error
	}
	backup := func() chan result {
		done := make(chan result, 1)
		go func() {
			m, err := n.Backup(ctx, nil)
			done <- result{m, err}
		}()
		<-reached
		return done
	}

	done := backup()
	b := progressAnswer(t, n).Backup
	if b == nil || !b.Running || b.Phase != snapshot.PhaseStoring || b.TotalPages == 0 || b.DonePages != b.TotalPages || b.Percent != 100 || b.Name == "" {
		t.Fatalf("a backup storing its artefact: %+v", b)
	}
	release <- nil
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	b = progressAnswer(t, n).Backup
	if b == nil || b.Running || b.Phase != snapshot.PhaseDone || b.Name != r.m.Name || b.EndedAt == nil {
		t.Fatalf("after the backup: %+v (took %s)", b, r.m.Name)
	}

	done = backup()
	release <- errors.New("the disk is full")
	if r := <-done; r.err == nil {
		t.Fatal("a backup whose artefact hook failed succeeded")
	}
	if b := progressAnswer(t, n).Backup; b == nil || b.Running || b.Phase != snapshot.PhaseFailed || b.Error == "" {
		t.Fatalf("after a failed backup: %+v", b)
	}
}

// progressAnswer reads the route as the REST handler serves it.
func progressAnswer(t *testing.T, n *node.Node) snapshot.ProgressAnswer {
	t.Helper()
	routes := n.BackupProgress().Routes()
	if len(routes) != 1 || routes[0].Pattern != snapshot.ProgressPath {
		t.Fatalf("routes %+v", routes)
	}
	v, err := routes[0].Serve(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return v.(snapshot.ProgressAnswer)
}
