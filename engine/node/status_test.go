//go:build integration

package node_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
)

// trackerFigures finds the tracker's log figures and this node's
// position in an answer.
func trackerFigures(t *testing.T, a fleet.Answer) (fleet.LogFigures, fleet.DomainFigures) {
	t.Helper()
	var lf fleet.LogFigures
	var df fleet.DomainFigures
	for _, l := range a.Logs {
		if l.Domain == engine.DomainTracker {
			lf = l
		}
	}
	for _, n := range a.Nodes {
		for _, d := range n.Domains {
			if d.Domain == engine.DomainTracker {
				df = d
			}
		}
	}
	return lf, df
}

// TestRetentionCapacityFigures: the retention answer names each log's
// ceiling, the bytes it holds and its ordinary ceiling; each node's
// longest apply transaction and batch; and the failure its applier is
// on now, from the first failed attempt until a retry succeeds.
func TestRetentionCapacityFigures(t *testing.T) {
	ctx := context.Background()
	var failing atomic.Bool
	n := enginetest.OpenNode(t, node.Config{Stream: node.StreamConfig{LogMaxBytes: map[string]int64{tracker.Spec.CeilingKey: 1 << 20}},
		Hooks: node.Hooks{BeforeApplyCommit: func(d engine.Domain, _ uint64) error {
			if d == engine.DomainTracker && failing.Load() {
				return errors.New("the disk said no")
			}
			return nil
		}}})
	mustProject(t, n.Tracker(), "ENG")
	n.Register().Beat(ctx)
	a, err := n.Retention().Answer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lf, df := trackerFigures(t, a)
	if lf.MaxBytes != 1<<20 || lf.Bytes == 0 || lf.OrdinaryCeiling != (1<<20)-(1<<20)/16 {
		t.Fatalf("the tracker log's figures: %+v", lf)
	}
	if df.Apply == nil || df.Apply.LongestBatch < 1 || df.Apply.LongestTx <= 0 || df.ApplyErr != "" {
		t.Fatalf("the tracker applier's figures: %+v %+v", df.Apply, df.ApplyErr)
	}

	failing.Store(true)
	w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: "held up"})
	if err != nil || w.Outcome != engine.Pending {
		t.Fatalf("a write its own node cannot apply: %+v %v", w, err)
	}
	enginetest.CheckFor(t, node.DefaultApplyRetryBudget, 50*time.Millisecond, func() error {
		n.Register().Beat(ctx)
		a, err := n.Retention().Answer(ctx)
		if err != nil {
			return err
		}
		if _, df := trackerFigures(t, a); !strings.Contains(df.ApplyErr, "the disk said no") {
			return errors.New("the applier's error is not named: " + df.ApplyErr)
		}
		return nil
	})
	failing.Store(false)
	if err := n.Replica(engine.DomainTracker).WaitApplied(ctx, enginetest.LastWrite(t, n, engine.DomainTracker)); err != nil {
		t.Fatal(err)
	}
	// The error is cleared just after the batch's progress is published.
	enginetest.CheckFor(t, node.DefaultApplyRetryBudget, 50*time.Millisecond, func() error {
		n.Register().Beat(ctx)
		a, err := n.Retention().Answer(ctx)
		if err != nil {
			return err
		}
		if _, df := trackerFigures(t, a); df.ApplyErr != "" {
			return errors.New("recovered, yet the applier's error is still named: " + df.ApplyErr)
		}
		return nil
	})
}
