package tracker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/tracker/trackapply"
	"github.com/crewlet/crewlet/engine/tracker/trackrec"
)

// BenchmarkBulkApplyDrain measures a maximal bulk update — 7 950 items
// given two tags each: 31 800 child rows (tag rows and history rows), in
// records of at most 4 000 rows — end to end through the write path and
// the applier, against a bare multi-row insert of the same number of
// two-column rows into the same database in the same run.
func BenchmarkBulkApplyDrain(b *testing.B) {
	const items = 7950
	r := newRig(b, time.Now())
	ctx := context.Background()
	r.project("ENG")
	keys := publishCreates(b, r, "ENG", items)
	if _, err := r.n.DB().Exec(`CREATE TABLE IF NOT EXISTS bench_bare (a TEXT NOT NULL, b TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	var bulk, bare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		out, err := r.svc.BulkUpdate(ctx, engine.WriteOptions{}, "ENG", keys, tracker.BulkPatch{AddTags: []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}})
		if err != nil || out.Outcome != engine.Applied {
			b.Fatalf("bulk: %+v %v", out, err)
		}
		bulk += time.Since(t0)
		t0 = time.Now()
		bareInsert(b, r, 4*items, i)
		bare += time.Since(t0)
	}
	b.StopTimer()
	rows := float64(4*items) * float64(b.N)
	b.ReportMetric(rows/bulk.Seconds(), "bulk-rows/s")
	b.ReportMetric(rows/bare.Seconds(), "bare-rows/s")
	b.ReportMetric(bare.Seconds()/bulk.Seconds(), "ratio-to-bare")
	b.ReportMetric(bulk.Seconds()/float64(b.N), "bulk-s/op")
	st := r.n.Replica(engine.DomainTracker).Stats().Apply
	b.ReportMetric(float64(st.LongestTxRows), "longest-tx-rows")
	b.ReportMetric(st.LongestTx.Seconds(), "longest-tx-s")
}

// bareInsert is the floor: the same rows as multi-row inserts of 1 000
// rows, committed every 4 000.
func bareInsert(b *testing.B, r *rig, n, round int) {
	db := r.n.DB()
	stmt := "INSERT INTO bench_bare(a, b) VALUES " + strings.TrimSuffix(strings.Repeat("(?,?),", 1000), ",")
	for start := 0; start < n; start += 4000 {
		tx, err := db.Begin()
		if err != nil {
			b.Fatal(err)
		}
		for j := start; j < min(start+4000, n); j += 1000 {
			args := make([]any, 0, 2000)
			for k := 0; k < 1000; k++ {
				args = append(args, fmt.Sprintf("wi_%d_%d", round, j+k), "tag")
			}
			if _, err := tx.Exec(stmt, args...); err != nil {
				b.Fatal(err)
			}
		}
		if err := tx.Commit(); err != nil {
			b.Fatal(err)
		}
	}
}

// publishCreates files n items by publishing their records straight onto
// the stream (no per-write wait), then waits for the applier.
func publishCreates(b testing.TB, r *rig, project string, n int) []string {
	ctx := context.Background()
	lg := r.n.Log(engine.DomainTracker)
	var last uint64
	for i := 0; i < n; i++ {
		w := r.op("create_work_item", project)
		payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("wi_b%07d", i), "project": project, "number": i + 1,
			"title": fmt.Sprintf("item %d", i), "description": "", "status": "open", "assignee": ""})
		rec := &record.Record{Kind: trackrec.KindCreateWorkItem, Version: 1, OpID: w.OpID, Writer: "n1", Generation: 1,
			Subject: "crewlet.tracker.project." + project, Payload: payload}
		data, err := record.Encode(rec)
		if err != nil {
			b.Fatal(err)
		}
		ack, err := lg.Publish(ctx, rec.Subject, data, w.OpID, nil)
		if err != nil {
			b.Fatal(err)
		}
		last = ack.Seq
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if err := r.svc.Replica().WaitApplied(wctx, last); err != nil {
		b.Fatal(err)
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("%s-%d", project, i+1)
	}
	return keys
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func vocabulary(n int) []string {
	rng := rand.New(rand.NewPCG(1, 2))
	out := make([]string, n)
	for i := range out {
		var w strings.Builder
		for j := 0; j < 4+rng.IntN(5); j++ {
			w.WriteByte(byte('a' + rng.IntN(26)))
		}
		out[i] = w.String()
	}
	return out
}

func buildFixture(b *testing.B, path string, items int, words []string) {
	ctx := context.Background()
	db, err := sqlite.Open(path, 5)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(trackapply.Domain{}.Schema()); err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	pick := func(k int) string {
		ws := make([]string, k)
		for i := range ws {
			ws[i] = words[rng.IntN(len(words))]
		}
		return strings.Join(ws, " ")
	}
	seq := uint64(1)
	apply := func(tx interface{}, rec *record.Record) {}
	_ = apply
	tx, _ := db.BeginTx(ctx, nil)
	pp, _ := json.Marshal(map[string]string{"key": "ENG", "name": "Engineering"})
	if err := (trackapply.Domain{}).Apply(ctx, tx, &record.Record{Kind: trackrec.KindCreateProject, Payload: pp, Subject: "crewlet.tracker.project.ENG"}, statelog.Applying{Seq: seq, Time: time.Now()}); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < items; i++ {
		if i%4000 == 0 {
			if err := tx.Commit(); err != nil {
				b.Fatal(err)
			}
			tx, _ = db.BeginTx(ctx, nil)
		}
		seq++
		payload, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("wi_f%07d", i), "project": "ENG", "number": i + 1,
			"title": pick(5), "description": pick(20), "status": "open", "assignee": ""})
		if err := (trackapply.Domain{}).Apply(ctx, tx, &record.Record{Kind: trackrec.KindCreateWorkItem, Payload: payload, Subject: "crewlet.tracker.project.ENG"},
			statelog.Applying{Seq: seq, Time: time.Now()}); err != nil {
			b.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)*p/100]
}
