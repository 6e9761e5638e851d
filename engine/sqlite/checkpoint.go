package sqlite

import (
	"context"
	"database/sql"
	"sync/atomic"
	"time"
)

// In WAL mode SQLite copies the WAL back into the database file (a
// checkpoint) inside the commit that finds the WAL past
// wal_autocheckpoint pages: that commit copies every page and fsyncs the
// database before it returns. On a node that commit is the applier's, and
// every write waiting for its record waits for the copy too: at one
// writer it came every hundred-odd writes and set the applied write's
// p99. A Checkpointer does the copy off the commit path, as a PASSIVE
// checkpoint (one that neither waits for nor blocks a reader or the
// writer) every CheckpointEvery; the inline checkpoint stays, at
// walBackstopPages, for a WAL that grows faster than the Checkpointer
// drains it.
const (
	// CheckpointEvery is how often a Checkpointer checkpoints. Each
	// checkpoint fsyncs the database file, on the disk the broker fsyncs
	// every append to: at one writer, every 50 ms left the applied write's
	// p99 higher than every 200 ms did.
	CheckpointEvery = 200 * time.Millisecond
	// walBackstopPages is wal_autocheckpoint: the WAL size (4 KB pages,
	// so 64 MB) past which a commit checkpoints inline after all. At 4
	// 000 pages (16 MB) it still fired inside the applier's commits: a
	// maximal bulk update writes about 4 000 pages, and its profile
	// showed the inline copy at 9 % of the node's CPU, on the bulk's own
	// latency (the copy is the Checkpointer's work either way).
	walBackstopPages = 16000
)

// Checkpointer checkpoints one database in the background until Stop.
type Checkpointer struct {
	// stop ends the loop, and a checkpoint under way (it is only a copy,
	// taken up again by the next one).
	stop context.CancelFunc
	done chan struct{}
	// runs counts the checkpoints that completed without an error.
	runs atomic.Uint64
}

// StartCheckpointer checkpoints db every interval until Stop, which must
// come before db is closed.
func StartCheckpointer(db *sql.DB, every time.Duration) *Checkpointer {
	ctx, stop := context.WithCancel(context.Background())
	c := &Checkpointer{stop: stop, done: make(chan struct{})}
	go c.run(ctx, db, every)
	return c
}

func (c *Checkpointer) run(ctx context.Context, db *sql.DB, every time.Duration) {
	defer close(c.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		// A failed checkpoint costs nothing but the copy: the next tick,
		// or the inline backstop, makes it.
		if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`); err == nil {
			c.runs.Add(1)
		}
	}
}

// Runs counts the checkpoints made so far.
func (c *Checkpointer) Runs() uint64 { return c.runs.Load() }

// Stop ends the checkpoints and returns once none is under way; a second
// Stop returns at once.
func (c *Checkpointer) Stop() {
	if c == nil {
		return
	}
	c.stop()
	<-c.done
}
