package tracker_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/tracker"
)

// BenchmarkBulkUpdateByFilter measures the seeds' maximal bulk update as
// bulk_update_work_items runs it — the 7 950 items a filter picks (status
// open), two tags each: 31 800 child rows (tag and history rows) in
// chunks of at most 4 000 rows, with a progress sink told after each —
// end to end through the write path and the applier, against a bare
// multi-row insert of the same number of rows in the same run.
func BenchmarkBulkUpdateByFilter(b *testing.B) {
	const items = 7950
	r := newRig(b, time.Now())
	r.project("ENG")
	publishCreates(b, r, "ENG", items)
	if _, err := r.n.DB().Exec(`CREATE TABLE IF NOT EXISTS bench_bare (a TEXT NOT NULL, b TEXT NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	var prog progressLog
	ctx := prog.ctx()
	var bulk, bare time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t0 := time.Now()
		out, err := r.svc.BulkUpdateWhere(ctx, engine.WriteOptions{}, "ENG", nil, tracker.BulkFilter{Status: tracker.StatusOpen},
			tracker.BulkPatch{AddTags: []string{fmt.Sprintf("a%d", i), fmt.Sprintf("b%d", i)}})
		if err != nil || out.Outcome != engine.Applied {
			b.Fatalf("bulk: %+v %v", out.WriteResult, err)
		}
		bulk += time.Since(t0)
		if got := prog.last(); got != [2]int{items, items} {
			b.Fatalf("progress ended at %v", got)
		}
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
}
