package enginetest

import (
	"testing"

	"github.com/crewlet/crewlet/engine/metrics"
)

// WritePhases is the write phases of domain summed over the registries of
// one or more nodes (a fleet's writes are decided on the node they were
// sent to).
func WritePhases(domain string, regs ...*metrics.Registry) metrics.PhaseTotals {
	sum := metrics.PhaseTotals{}
	for _, r := range regs {
		sum.Add(r.WritePhases(domain))
	}
	return sum
}

// ReportWritePhases adds to a benchmark's figures the mean time a write's
// round spent in each phase between the before and after readings:
// decide-µs, append-µs and settle-µs.
func ReportWritePhases(b *testing.B, before, after metrics.PhaseTotals) {
	means := after.Since(before).Means()
	for _, p := range metrics.Phases {
		if mean, ok := means[p]; ok {
			b.ReportMetric(float64(mean.Nanoseconds())/1e3, p+"-µs")
		}
	}
}
