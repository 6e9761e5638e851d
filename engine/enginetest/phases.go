package enginetest

import (
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/metrics"
)

// WritePhases is the write phases of domain summed over the registries of
// one or more nodes (a fleet's writes are decided on the node they were
// sent to).
func WritePhases(domain string, regs ...*metrics.Registry) map[string]metrics.PhaseTotal {
	sum := map[string]metrics.PhaseTotal{}
	for _, r := range regs {
		for p, t := range r.WritePhases(domain) {
			s := sum[p]
			s.Rounds += t.Rounds
			s.Took += t.Took
			sum[p] = s
		}
	}
	return sum
}

// ReportWritePhases adds to a benchmark's figures the mean time a write's
// round spent in each phase between the before and after readings:
// decide-µs, append-µs and settle-µs.
func ReportWritePhases(b *testing.B, before, after map[string]metrics.PhaseTotal) {
	for _, p := range []string{metrics.PhaseDecide, metrics.PhaseAppend, metrics.PhaseSettle} {
		rounds := after[p].Rounds - before[p].Rounds
		if rounds == 0 {
			continue
		}
		mean := (after[p].Took - before[p].Took) / time.Duration(rounds)
		b.ReportMetric(float64(mean.Nanoseconds())/1e3, p+"-µs")
	}
}
