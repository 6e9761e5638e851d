package enginetest

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// The bare loops every benchmark's figure is reported against, measured
// in the same run: what the engine cannot do with less.

// Latencies collects one sample per operation.
type Latencies []time.Duration

// Report adds p50 and p99 in µs to the benchmark's figures.
func (l Latencies) Report(b *testing.B) {
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds())/1e3, "p50-µs")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds())/1e3, "p99-µs")
}

// Timed runs f b.N times, timing each, and reports the percentiles.
func Timed(b *testing.B, f func(i int)) {
	lat := make(Latencies, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		f(i)
		lat = append(lat, time.Since(t0))
	}
	b.StopTimer()
	lat.Report(b)
}

// BareDB is a SQLite file of 10 000 seven-column rows in table t, and a
// one-row checkpoint table cp, opened the way the node opens its own.
func BareDB(b testing.TB) *sql.DB {
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bare.db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE cp(id INTEGER PRIMARY KEY, seq INTEGER); INSERT INTO cp VALUES(1, 0);
		CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, b TEXT, c INTEGER, d INTEGER, e TEXT, f TEXT)`); err != nil {
		b.Fatal(err)
	}
	tx, _ := db.Begin()
	for i := 0; i < 10000; i++ {
		tx.Exec(`INSERT INTO t VALUES(?,?,?,?,?,?,?)`, i, "title", "desc", i, i, "open", "x")
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	return db
}

// BareRig is an embedded broker syncing always, one stream BARE, a pull
// consumer feeding one goroutine that commits a checkpoint row and then
// sends the sequence on Applied, and a BareDB.
type BareRig struct {
	JS      jetstream.JetStream
	DB      *sql.DB
	Applied chan uint64
}

// NewBareRig starts the rig; it stops when the benchmark ends.
func NewBareRig(b testing.TB) *BareRig {
	br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "bare", StoreDir: filepath.Join(b.TempDir(), "stream"), Sync: broker.Sync{Always: true}})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, err := br.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "BARE", Subjects: []string{"bare.>"}, Storage: jetstream.FileStorage})
	if err != nil {
		b.Fatal(err)
	}
	db := BareDB(b)
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{Durable: "bare", AckPolicy: jetstream.AckNonePolicy})
	if err != nil {
		b.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		b.Fatal(err)
	}
	r := &BareRig{JS: br.JS, DB: db, Applied: make(chan uint64, 1024)}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			m, err := it.Next()
			if errors.Is(err, jetstream.ErrNoHeartbeat) {
				continue // a missed heartbeat: the iterator re-pulls on its own
			}
			if err != nil {
				return
			}
			md, _ := m.Metadata()
			tx, _ := db.Begin()
			tx.Exec(`UPDATE cp SET seq = ? WHERE id = 1`, md.Sequence.Stream)
			tx.Commit()
			select {
			case r.Applied <- md.Sequence.Stream:
			default:
			}
		}
	}()
	b.Cleanup(func() { it.Stop(); wg.Wait(); br.Close() })
	return r
}

// WaitApplied reads Applied until seq has been committed.
func (r *BareRig) WaitApplied(seq uint64) {
	for s := range r.Applied {
		if s >= seq {
			return
		}
	}
}

// BareBarrierLoop is the bare linearizable read: publish a barrier, wait
// for the pull consumer to commit its checkpoint, point select.
func BareBarrierLoop(b *testing.B) {
	r := NewBareRig(b)
	ctx := context.Background()
	Timed(b, func(i int) {
		ack, err := r.JS.Publish(ctx, "bare.barrier", []byte(`{"kind":"barrier"}`))
		if err != nil {
			b.Fatal(err)
		}
		r.WaitApplied(ack.Sequence)
		var a string
		if err := r.DB.QueryRow(`SELECT a FROM t WHERE id = ?`, i%10000).Scan(&a); err != nil {
			b.Fatal(err)
		}
	})
}
