package peerbench

import (
	"context"
	"time"

	"github.com/crewlet/crewlet/engine/metrics"
)

// costs is what one target's measurements of one workload cost it: its
// writes' phases (Phaser) and its processes' CPU (CPUMeter). A reading
// that fails leaves that figure out, never the measurement.
type costs struct {
	phases metrics.PhaseTotals
	cpu    time.Duration
	// cpuLost is set once a CPU reading failed: the sum then covers only
	// some measurements and is not reported.
	cpuLost bool
	// rss is the most the target's processes held at a round's end.
	rss int64
}

// writes says whether a kind's operations are writes (their phases are
// read around them).
func (k Kind) writes() bool { return k == Create || k == Update || k == Bulk || k == ToyWrite }

// measureCosts measures w on t and adds what the measurement cost to c.
func measureCosts(ctx context.Context, t Target, w Workload, d time.Duration, c *costs) measurement {
	ph, phased := t.(Phaser)
	phased = phased && w.Kind.writes()
	meter, metered := t.(CPUMeter)
	var before metrics.PhaseTotals
	var berr error
	if phased {
		before, berr = ph.WritePhases(ctx)
	}
	var cpu0 time.Duration
	cerr := errNoProcesses
	if metered {
		cpu0, cerr = meter.ServerCPU()
	}
	m := measure(ctx, t, w, d)
	if metered && cerr == nil {
		var cpu1 time.Duration
		if cpu1, cerr = meter.ServerCPU(); cerr == nil {
			c.cpu += cpu1 - cpu0
		}
	}
	c.cpuLost = c.cpuLost || cerr != nil
	if mem, ok := t.(Memory); ok {
		if rss, err := mem.ServerRSS(); err == nil {
			c.rss = max(c.rss, rss)
		}
	}
	if phased {
		if after, err := ph.WritePhases(ctx); berr == nil && err == nil {
			c.phases.Add(after.Since(before))
		}
	}
	return m
}

// perOp is the CPU an operation cost, over ok operations; 0 when it is
// not known.
func (c *costs) perOp(ok int) time.Duration {
	if c.cpuLost || ok == 0 {
		return 0
	}
	return c.cpu / time.Duration(ok)
}
