//go:build integration

package fleettest_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
)

// TestBootWaitsOutALeaderlessMember: a member of a log with no leader
// answers a stream info request from its own copy, which is behind where
// it was cut off. A boot whose checkpoint is past that end waits for a
// leader instead of judging on the member's word (the soak met a restart
// refused so, seed 9117); once a leader answers, a checkpoint really past
// the log's end opens refusing wrong_stream.
func TestBootWaitsOutALeaderlessMember(t *testing.T) {
	c := fleettest.StartCluster(t, fleettest.Options{})
	ctx := context.Background()
	pw, err := c.Node(0).Tracker().CreateProject(ctx, engine.WriteOptions{}, "ENG", "Engineering")
	enginetest.Landed(t, c.Node(0), engine.DomainTracker, pw.WriteResult, err)
	log := c.Node(0).Log(engine.DomainTracker)
	c.Stop(1)
	c.Stop(2)
	var info statelog.LogInfo
	enginetest.CheckFor(t, 90*time.Second, 250*time.Millisecond, func() error {
		ictx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		if info, err = log.Info(ictx); err != nil {
			return err
		}
		if !info.Leaderless {
			return errors.New("the log still names a leader")
		}
		return nil
	})
	t.Logf("n1 answers for the leaderless log: ends at %d", info.LastSeq)
	// Its own replication answer claims no lag it cannot measure.
	if st := c.Node(0).Replica(engine.DomainTracker).Replication(ctx); st.Level != engine.ConsistentPrefix || st.Note == "" {
		t.Fatalf("replication with a leaderless log: %s (%s), want consistent_prefix with a sentence", st.Level, st.Note)
	}
	// Nor does the retention answer take the member's end at its word.
	if a, err := c.Node(0).Retention().Answer(ctx); err == nil {
		for _, l := range a.Logs {
			if l.Domain == engine.DomainTracker && (l.Measured || a.Level != engine.ConsistentPrefix) {
				t.Fatalf("the retention answer measured the leaderless log's end: %s %+v", a.Level, l)
			}
		}
	}

	db := copyPastTheEnd(t, log, info)
	logs := enginetest.NewRecorder()
	// open opens the copy and answers how it stands: the boot's error,
	// or, opened, the refusal its reads answer (nil for none).
	open := func(d time.Duration) error {
		octx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		r, err := statelog.Open(octx, statelog.Config{Node: "probe", DB: db, Log: log, Domain: trackapply.Domain{},
			Logger: logs.Logger()})
		if err != nil {
			return err
		}
		defer r.Close()
		if ref := r.OutOfService(); ref != nil {
			return ref
		}
		return errors.New("opened a copy whose checkpoint is past the log's end, and serves it")
	}
	t0 := time.Now()
	err = open(3 * time.Second)
	if engine.CodeOf(err) == engine.CodeWrongStream {
		t.Fatalf("refused on a leaderless member's word: %v", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(t0) < 3*time.Second {
		t.Fatalf("the boot did not wait for a leader: %v after %v", err, time.Since(t0))
	}
	if n := len(logs.Lines("statelog_boot_awaits_leader")); n != 1 {
		t.Fatalf("statelog_boot_awaits_leader logged %d times, want once", n)
	}

	// With a leader back, the log's end is the leader's: still behind the
	// checkpoint, so this copy is keyed to another history: it opens (the
	// node stays up) and refuses wrong_stream.
	for i := 1; i < 3; i++ {
		if err := c.Start(i); err != nil {
			t.Fatal(err)
		}
	}
	if err := open(2 * time.Minute); engine.CodeOf(err) != engine.CodeWrongStream {
		t.Fatalf("with a leader: %v, want wrong_stream", fmt.Sprint(err))
	}
}

// copyPastTheEnd is a database whose tracker checkpoint is past the
// member's end, as a node's is when its applier took records its own
// broker's replica had not.
func copyPastTheEnd(t *testing.T, log statelog.Log, info statelog.LogInfo) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(filepath.Join(t.TempDir(), sqlite.FileName), 5)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.Exec(statelog.Schema); err != nil {
		t.Fatal(err)
	}
	ahead := info.LastSeq + 5
	if _, err := db.Exec(`INSERT INTO statelog_checkpoint(domain, stream, generation, seq, applied_through, stream_created_at, checkpoint_stored_at) VALUES(?,?,1,?,?,?,0)`,
		string(engine.DomainTracker), log.Stream(), ahead, ahead, info.Created.UnixNano()); err != nil {
		t.Fatal(err)
	}
	return db
}
