//go:build integration

package fleettest_test

import (
	"context"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
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
	if err != nil {
		t.Fatal(w, err)
	}
	// A loaded machine may answer pending: wait for the apply, then read
	// the item the create filed.
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, w.WriteResult, err)
	if w.Item != nil {
		return c, w.Item
	}
	read, err := svc.GetWorkItem(ctx, engine.ReadOptions{Level: engine.Linearizable}, "ENG-1")
	if err != nil {
		t.Fatal(err)
	}
	return c, &read.Item
}
