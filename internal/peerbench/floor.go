package peerbench

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/internal/loopback"
)

// Floor is the bare loop a Crewlet write or linearizable read is held
// against, run inside the bench's own process on the same parts: embedded
// nats-server(s) syncing always (clustered, the stream replicated, at
// --replicas above one), a stream, a durable pull consumer whose one
// goroutine commits each message's sequence to a SQLite checkpoint row
// the way the node opens its database, and a wait for that commit. A
// write is one append with the exactly-once headers a Crewlet write
// carries (Nats-Msg-Id and the expected last sequence on its subject);
// a linearizable read is a barrier append, the wait, and a point select.
// Nothing is decided, encoded, applied to rows or answered over HTTP:
// what Crewlet spends beyond it is its own.
type Floor struct {
	// Dir holds the brokers' stores and the database.
	Dir string
	// Replicas is how many brokers, and the stream's replicas.
	Replicas int

	brokers []*broker.Embedded
	db      *sql.DB
	cons    jetstream.MessagesContext
	done    chan struct{}
	applied atomic.Uint64
	dead    bool // the applier stopped (under mu)
	mu      sync.Mutex
	cond    *sync.Cond
	seq     atomic.Uint64 // message ids
	last    [Workers]uint64
}

// Name is "floor".
func (f *Floor) Name() string { return "floor" }

// Supports the writes and the linearizable reads.
func (f *Floor) Supports(k Kind) bool {
	return k == Create || k == Update || k == ToyWrite || k == Linearizable || k == ToyLinear
}

// Setup starts the brokers, the stream, the database and the applier.
func (f *Floor) Setup(ctx context.Context, _ Plan) error {
	n := max(f.Replicas, 1)
	var cluster []string
	ports, err := loopback.Ports(n)
	if err != nil {
		return err
	}
	for _, p := range ports {
		cluster = append(cluster, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	for i := 0; i < n; i++ {
		o := broker.EmbeddedOptions{ServerName: fmt.Sprintf("floor%d", i+1), StoreDir: filepath.Join(f.Dir, fmt.Sprintf("b%d", i+1)), Sync: broker.Sync{Always: true}, MaxStore: 1 << 30}
		if n > 1 {
			o.Cluster = &broker.ClusterOptions{Name: "floor", Listen: strings.TrimPrefix(cluster[i], "nats://"), Routes: cluster}
		}
		b, err := broker.StartEmbedded(o)
		if err != nil {
			return err
		}
		f.brokers = append(f.brokers, b)
	}
	stream, err := f.stream(ctx, n)
	if err != nil {
		return err
	}
	if f.db, err = sqlite.Open(filepath.Join(f.Dir, "floor.db"), 5); err != nil {
		return err
	}
	if _, err := f.db.Exec(`CREATE TABLE cp(id INTEGER PRIMARY KEY, seq INTEGER); INSERT INTO cp VALUES(1, 0);
		CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT)`); err != nil {
		return err
	}
	if _, err := f.db.Exec(`INSERT INTO t VALUES(1, 'the row the reads read')`); err != nil {
		return err
	}
	c, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "floor", AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		return err
	}
	if f.cons, err = c.Messages(); err != nil {
		return err
	}
	f.cond, f.done = sync.NewCond(&f.mu), make(chan struct{})
	go f.apply()
	return nil
}

// stream creates the stream once the cluster has a meta leader.
func (f *Floor) stream(ctx context.Context, n int) (jetstream.Stream, error) {
	deadline := time.Now().Add(time.Minute)
	for {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		s, err := f.brokers[0].JS.CreateStream(cctx, jetstream.StreamConfig{Name: "FLOOR", Subjects: []string{"floor.>"},
			Storage: jetstream.FileStorage, Replicas: n, Duplicates: 2 * time.Minute})
		cancel()
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return s, err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// apply commits each message's sequence, one transaction a message, and
// wakes the waiters.
func (f *Floor) apply() {
	defer func() {
		f.mu.Lock()
		f.dead = true
		f.cond.Broadcast()
		f.mu.Unlock()
		close(f.done)
	}()
	for {
		m, err := f.cons.Next()
		if errors.Is(err, jetstream.ErrNoHeartbeat) {
			continue // a missed heartbeat: the iterator pulls again itself
		}
		if err != nil {
			return
		}
		md, err := m.Metadata()
		if err != nil {
			return
		}
		tx, err := f.db.Begin()
		if err != nil {
			return
		}
		if _, err := tx.Exec(`UPDATE cp SET seq = ? WHERE id = 1`, md.Sequence.Stream); err != nil {
			tx.Rollback()
			return
		}
		if err := tx.Commit(); err != nil {
			return
		}
		f.mu.Lock()
		f.applied.Store(md.Sequence.Stream)
		f.cond.Broadcast()
		f.mu.Unlock()
	}
}

// wait returns once seq is committed, or the applier stopped.
func (f *Floor) wait(seq uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for f.applied.Load() < seq && !f.dead {
		f.cond.Wait()
	}
	if f.dead {
		return errors.New("floor: the applier stopped")
	}
	return nil
}

// Do runs one bare write or read through the worker's broker.
func (f *Floor) Do(ctx context.Context, w Workload, worker, _ int) error {
	js := f.brokers[worker%len(f.brokers)].JS
	if w.Kind == Linearizable || w.Kind == ToyLinear {
		ack, err := js.Publish(ctx, "floor.barrier", nil)
		if err != nil {
			return err
		}
		if err := f.wait(ack.Sequence - 1); err != nil {
			return err
		}
		var title string
		return f.db.QueryRowContext(ctx, `SELECT title FROM t WHERE id = 1`).Scan(&title)
	}
	// A create's record is about 400 bytes on the log.
	wk := worker % Workers
	payload := make([]byte, 400)
	ack, err := js.Publish(ctx, fmt.Sprintf("floor.item.%d", wk), payload,
		jetstream.WithMsgID(fmt.Sprintf("op-%d", f.seq.Add(1))), jetstream.WithExpectLastSequencePerSubject(f.last[wk]))
	if err != nil {
		return err
	}
	f.last[wk] = ack.Sequence
	return f.wait(ack.Sequence)
}

// Close stops the applier, the database and the brokers.
func (f *Floor) Close() {
	if f.cons != nil {
		f.cons.Stop()
		<-f.done
	}
	if f.db != nil {
		f.db.Close()
	}
	for _, b := range f.brokers {
		b.Close()
	}
}
