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
	// rss and pss are the most the target's processes held at a round's
	// end (Resident).
	rss, pss int64
	// drain is the time the target's processes took, summed over the
	// rounds, to fall quiet after the writes of a measurement (drain).
	drain time.Duration
}

// Draining: after a measurement of writes, the CPU the target's processes
// spend until they are quiet again is the measurement's too. A Crewlet
// node embeds every source a write changed on the embedding duty, which
// runs every second, so a burst of creates leaves work behind it; counted
// in the next measurement, or on another target's round that shares the
// machine, it would flatter this one's CPU per operation and burden the
// other's rate. Quiet is at most drainQuiet of one core over each
// drainInterval (a node's heartbeats alone stay under it) for
// drainQuietFor on end, waited for at most drainMax.
const (
	drainInterval = 250 * time.Millisecond
	drainQuiet    = 0.10
	// drainQuietFor is longer than the embedding duty's tick
	// (vectors.DutyInterval, 1 s): work a duty starts on its next tick,
	// after a quiet moment, is still the measurement's. One quiet
	// interval was not enough for a duty that waits for a burst to end.
	drainQuietFor = 5 * drainInterval
	drainMax      = 2 * time.Minute
	// setupDrainMax bounds the wait after a target's set-up, which may
	// have filed a corpus of 100 000 items to embed.
	setupDrainMax = 10 * time.Minute
)

// writes says whether a kind's operations are writes (their phases are
// read around them).
func (k Kind) writes() bool { return k == Create || k == Update || k == Bulk || k == ToyWrite }

// measureCosts measures w on t and adds what the measurement cost to c.
// measured, when set, is called as the measurement ends, before the
// drain.
func measureCosts(ctx context.Context, t Target, w Workload, d time.Duration, c *costs, measured func()) measurement {
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
	if measured != nil {
		measured()
	}
	if metered && cerr == nil && w.Kind.writes() {
		var took time.Duration
		took, cerr = drain(ctx, meter)
		c.drain += took
	}
	if metered && cerr == nil {
		var cpu1 time.Duration
		if cpu1, cerr = meter.ServerCPU(); cerr == nil {
			c.cpu += cpu1 - cpu0
		}
	}
	c.cpuLost = c.cpuLost || cerr != nil
	if mem, ok := t.(Memory); ok {
		if r, err := mem.ServerMemory(); err == nil {
			c.rss, c.pss = max(c.rss, r.RSS), max(c.pss, r.PSS)
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

// drain waits until the processes of meter spend at most drainQuiet of a
// core over every drainInterval of drainQuietFor, and says how long they
// stayed busy before that (drainMax at most).
func drain(ctx context.Context, meter CPUMeter) (time.Duration, error) {
	return settle(ctx, meter, drainMax)
}

// settle is drain with its bound.
func settle(ctx context.Context, meter CPUMeter, most time.Duration) (time.Duration, error) {
	start := time.Now()
	last, err := meter.ServerCPU()
	if err != nil {
		return 0, err
	}
	// quietSince is when the current run of quiet intervals began.
	quietSince := time.Time{}
	for time.Since(start) < most {
		began := time.Now()
		select {
		case <-ctx.Done():
			return time.Since(start), ctx.Err()
		case <-time.After(drainInterval):
		}
		now, err := meter.ServerCPU()
		if err != nil {
			return time.Since(start), err
		}
		switch {
		case float64(now-last) > drainQuiet*float64(time.Since(began)):
			quietSince = time.Time{}
		case quietSince.IsZero():
			quietSince = began
		}
		if !quietSince.IsZero() && time.Since(quietSince) >= drainQuietFor {
			return quietSince.Sub(start), nil
		}
		last = now
	}
	return time.Since(start), nil
}
