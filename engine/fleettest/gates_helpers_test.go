package fleettest_test

import (
	"context"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/tracker"
)

// clusterWithItem starts three nodes and files project ENG with one work
// item through node 0, the starting point of the gate tests.
func clusterWithItem(t *testing.T, ctx context.Context, title string) (*fleettest.Cluster, *tracker.WorkItem) {
	t.Helper()
	c := fleettest.StartCluster(t, fleettest.Options{})
	svc := c.Node(0).Tracker()
	if _, err := svc.CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering"); err != nil {
		t.Fatal(err)
	}
	w, err := svc.CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: title})
	if err != nil || w.Item == nil {
		t.Fatal(w, err)
	}
	return c, w.Item
}
