package trim_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/trim"
)

// TestTerms: who is counted (every node of the log's domain and stream,
// but the evicted), the node term (the lowest position, naming its
// node), the holding term (the lowest, the first listed on a tie) and the
// trimmer (the leader's node where it is counted, else the lowest name).
func TestTerms(t *testing.T) {
	pos := []fleet.Position{
		{Node: "n2", Domain: engine.DomainTracker, Stream: "T", Seq: 40},
		{Node: "n1", Domain: engine.DomainTracker, Stream: "T", Seq: 70},
		{Node: "n3", Domain: engine.DomainTracker, Stream: "T", Seq: 0}, // entered, no beat yet
		{Node: "n4", Domain: engine.DomainTracker, Stream: "T", Seq: 5},
		{Node: "n1", Domain: engine.DomainPages, Stream: "P", Seq: 1},
		{Node: "n5", Domain: engine.DomainTracker, Stream: "OTHER", Seq: 1},
	}
	counted := trim.Counted(pos, engine.DomainTracker, "T", []string{"n4"})
	var names []string
	for _, p := range counted {
		names = append(names, p.Node)
	}
	if fmt.Sprint(names) != "[n1 n2 n3]" {
		t.Fatalf("counted %v, want n1 n2 n3 (n4 evicted, n5 on another stream, pages another domain)", names)
	}
	if nt := trim.NodeTerm(counted); nt.Seq != 0 || nt.Holder != "n3" || nt.Term != fleet.TermNode {
		t.Fatalf("node term %+v: a node at zero until its first beat holds the floor at zero", nt)
	}
	h := trim.Holding([]fleet.Term{{Term: fleet.TermNode, Seq: 9}, {Term: fleet.TermBackup, Seq: 7}, {Term: fleet.TermAge, Seq: 7}})
	if h.Term != fleet.TermBackup {
		t.Fatalf("holding %+v, want the backup (lowest, first listed on the tie)", h)
	}
	if got := trim.TrimmerOf("n2", counted); got != "n2" {
		t.Fatalf("trimmer %s, want the leader's node n2", got)
	}
	if got := trim.TrimmerOf("broker-x", counted); got != "n1" {
		t.Fatalf("trimmer %s, want the lowest name n1 when the leader is no counted node", got)
	}
	if got := trim.TrimmerOf("", nil); got != "" {
		t.Fatalf("trimmer of nobody: %q", got)
	}
}

// TestAgeTerm: on a real log, the age term is the newest record stored at
// or before the cutoff, found across a record deleted from the middle;
// with every record younger it is the one before the log's first.
func TestAgeTerm(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{})
	if _, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Eng"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 8; i++ {
		w, err := n.Tracker().CreateWorkItem(ctx, engine.WriteOptions{}, tracker.NewWorkItem{Project: "ENG", Title: fmt.Sprint(i)})
		enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
	}
	l := n.Log(engine.DomainTracker)
	info, err := l.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := n.Broker().JS.Stream(ctx, engine.StreamTracker)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(ctx, 4); err != nil {
		t.Fatal(err)
	}
	for _, k := range []uint64{2, 3, 5, info.LastSeq} {
		m, err := l.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		got, err := trim.AgeTerm(ctx, l, info, m.Time)
		if err != nil {
			t.Fatal(err)
		}
		// Records stored in the same instant are equally old.
		if got.Seq < k {
			t.Fatalf("cutoff at record %d's instant: age term %d", k, got.Seq)
		}
		if got.Seq < info.LastSeq {
			next, err := l.Get(ctx, got.Seq+1)
			if err == nil && !next.Time.After(m.Time) {
				t.Fatalf("cutoff at record %d's instant: age term %d, but %d is no younger", k, got.Seq, next.Seq)
			}
		}
	}
	first, err := l.Get(ctx, info.FirstSeq)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := trim.AgeTerm(ctx, l, info, first.Time.Add(-time.Nanosecond)); err != nil || got.Seq != info.FirstSeq-1 {
		t.Fatalf("every record younger: %+v %v", got, err)
	}
}

// TestAgeFloorHoldsTheTrim: with a backup past everything and the node
// itself caught up, records younger than the age floor are kept: the
// floor stays at zero held by the age term, and the broker purges nothing.
func TestAgeFloorHoldsTheTrim(t *testing.T) {
	ctx := context.Background()
	n := enginetest.OpenNode(t, node.Config{HeartbeatInterval: 20 * time.Millisecond,
		Trim: node.TrimConfig{MinAge: time.Hour, Interval: time.Hour}})
	w, err := n.Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Eng")
	enginetest.Landed(t, n, engine.DomainTracker, w.WriteResult, err)
	if _, err := n.Backup(ctx, nil); err != nil {
		t.Fatal(err)
	}
	end := enginetest.LastWrite(t, n, engine.DomainTracker)
	enginetest.CheckFor(t, 30*time.Second, 10*time.Millisecond, func() error {
		all, err := fleet.ReadAll(ctx, n.Register().KV())
		if err != nil {
			return err
		}
		for _, p := range all {
			if p.Domain == engine.DomainTracker && p.Seq >= end {
				return nil
			}
		}
		return fmt.Errorf("n1 has not published %d", end)
	})
	fs, err := n.Trim().Once(ctx)
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for _, f := range fs {
		if f.Domain == engine.DomainTracker {
			seen = true
			if f.Through != 0 || f.Term != fleet.TermAge {
				t.Fatalf("floor %+v, want 0 held by the age floor", f)
			}
		}
	}
	if !seen {
		t.Fatalf("the lone node did not trim the tracker log: %+v", fs)
	}
	if info, err := n.Log(engine.DomainTracker).Info(ctx); err != nil || info.FirstSeq != 1 {
		t.Fatalf("the log starts at %d (%v): young records were purged", info.FirstSeq, err)
	}
}
