// Package peerbench runs the same workloads against Crewlet and against a
// peer system (rqlite) over each one's own HTTP API, interleaved in one
// run, and tabulates medians and ratios. It is what `crewlet bench`
// prints: figures a user can reproduce on their own machine beside a peer
// they built themselves, rather than numbers measured elsewhere.
//
// Each workload runs for a fixed time per round at a fixed concurrency;
// the targets take turns within a round (the order alternating between
// rounds), so a shared machine's noise falls on both. A workload's
// throughput is the median over rounds of the operations that succeeded
// per second; its latency percentiles pool every successful operation.
// What a measurement cost the target is read around it (costs.go): the
// CPU its own processes spent, where the bench started them (cpu.go), and
// where a Crewlet fleet's writes spent their time, from its nodes'
// /metrics (phases.go).
package peerbench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/crewlet/crewlet/engine/metrics"
)

// Target is one system under test, reached over its HTTP API.
type Target interface {
	// Name labels the target's columns ("crewlet", "rqlite").
	Name() string
	// Setup creates what the workloads need (a project and one item; a
	// table and one row). It is called once, before the first round.
	Setup(ctx context.Context) error
	// Do runs one operation of the workload; worker and i make writes
	// distinct. An operation that ended without its promise (a write not
	// applied, a read refused) returns an error and is counted as failed.
	Do(ctx context.Context, w Workload, worker, i int) error
	Close()
}

// Workload is one kind of operation at one concurrency.
type Workload struct {
	Kind        Kind
	Concurrency int
}

// Kind is what a workload's operation does.
type Kind string

// The kinds: the transport floor (a health check, the bare HTTP round
// trip), a durable write answered applied, a linearizable read of one row
// and a stale read of it.
const (
	Floor        Kind = "http_floor"
	Write        Kind = "write"
	Linearizable Kind = "read_linearizable"
	Stale        Kind = "read_stale"
)

func (w Workload) String() string { return fmt.Sprintf("%s c=%d", w.Kind, w.Concurrency) }

// DefaultWorkloads are the rows: single and c=64 writes,
// linearizable reads alone and at c=64, stale reads, and the floor.
func DefaultWorkloads() []Workload {
	return []Workload{
		{Floor, 1}, {Write, 1}, {Write, 64}, {Linearizable, 1}, {Linearizable, 64}, {Stale, 1}, {Stale, 64},
	}
}

// Config is one run.
type Config struct {
	Targets   []Target
	Workloads []Workload
	Rounds    int
	PerRound  time.Duration // how long each workload runs per target per round
	// Progress, when set, gets one line per finished measurement.
	Progress io.Writer
}

// Figure is one workload's result on one target.
type Figure struct {
	Target    string        `json:"target"`
	Workload  string        `json:"workload"`
	OpsPerSec float64       `json:"ops_per_sec"` // median over rounds
	P50       time.Duration `json:"p50_ns"`
	P99       time.Duration `json:"p99_ns"`
	Ok        int           `json:"ok"`
	Failed    int           `json:"failed"`
	FirstErr  string        `json:"first_error,omitempty"`
	// WritePhases is, for a target that says (Phaser) and a workload that
	// writes, the mean time a write's round spent in each phase.
	WritePhases map[string]time.Duration `json:"write_phases_ns,omitempty"`
	// CPUPerOp is the CPU time the target's server processes used per
	// operation completed, where the bench started them (CPUMeter).
	CPUPerOp time.Duration `json:"cpu_per_op_ns,omitempty"`
}

// Run sets every target up, then runs the rounds.
func Run(ctx context.Context, c Config) ([]Figure, error) {
	for _, t := range c.Targets {
		if err := t.Setup(ctx); err != nil {
			return nil, fmt.Errorf("%s: set-up: %w", t.Name(), err)
		}
	}
	type acc struct {
		rates    []float64
		lats     []time.Duration
		ok, fail int
		firstErr string
		target   string
		workload string
		costs    costs
	}
	accs := map[string]*acc{}
	var order []string
	for r := 0; r < c.Rounds; r++ {
		for _, w := range c.Workloads {
			for k := range c.Targets {
				// Alternate which target goes first, round by round.
				t := c.Targets[(k+r)%len(c.Targets)]
				key := t.Name() + "|" + w.String()
				a := accs[key]
				if a == nil {
					a = &acc{target: t.Name(), workload: w.String(), costs: costs{phases: metrics.PhaseTotals{}}}
					accs[key] = a
					order = append(order, key)
				}
				m := measureCosts(ctx, t, w, c.PerRound, &a.costs)
				a.rates = append(a.rates, float64(len(m.lats))/m.elapsed.Seconds())
				a.lats = append(a.lats, m.lats...)
				a.ok += len(m.lats)
				a.fail += m.failed
				if a.firstErr == "" {
					a.firstErr = m.firstErr
				}
				if c.Progress != nil {
					fmt.Fprintf(c.Progress, "round %d/%d %s %s: %.0f ops/s, %d failed\n", r+1, c.Rounds, t.Name(), w, a.rates[len(a.rates)-1], m.failed)
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
			}
		}
	}
	out := make([]Figure, 0, len(order))
	for _, key := range order {
		a := accs[key]
		out = append(out, Figure{Target: a.target, Workload: a.workload, OpsPerSec: median(a.rates),
			P50: percentile(a.lats, 0.50), P99: percentile(a.lats, 0.99), Ok: a.ok, Failed: a.fail, FirstErr: a.firstErr,
			WritePhases: a.costs.phases.Means(), CPUPerOp: a.costs.perOp(a.ok)})
	}
	return out, nil
}

type measurement struct {
	lats     []time.Duration
	failed   int
	firstErr string
	elapsed  time.Duration
}

// measure runs w on t for d with w.Concurrency workers. The round's end
// is checked between operations, never by cutting one short, and every
// worker completes at least one: on a slow machine a round runs long
// rather than measuring nothing.
func measure(ctx context.Context, t Target, w Workload, d time.Duration) measurement {
	var (
		mu sync.Mutex
		m  measurement
		wg sync.WaitGroup
	)
	start := time.Now()
	end := start.Add(d)
	for worker := 0; worker < w.Concurrency; worker++ {
		wg.Add(1)
		go func(worker int) {
			defer wg.Done()
			var lats []time.Duration
			failed, firstErr := 0, ""
			for i := 0; ctx.Err() == nil && (i == 0 || time.Now().Before(end)); i++ {
				t0 := time.Now()
				if err := t.Do(ctx, w, worker, i); err != nil {
					failed++
					if firstErr == "" {
						firstErr = err.Error()
					}
					continue
				}
				lats = append(lats, time.Since(t0))
			}
			mu.Lock()
			defer mu.Unlock()
			m.lats = append(m.lats, lats...)
			m.failed += failed
			if m.firstErr == "" {
				m.firstErr = firstErr
			}
		}(worker)
	}
	wg.Wait()
	m.elapsed = time.Since(start)
	return m
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(p*float64(len(s)-1))]
}

// WriteTable prints one row per workload: each target's ops/s, p50, p99,
// failures and, where known, CPU per operation; where there are two
// targets, the first's throughput as a ratio of the second's and its CPU
// per operation as a ratio of the second's (below 1: it spent less);
// then, where a target said, where its writes spent their time.
func WriteTable(w io.Writer, figs []Figure) error {
	var targets, workloads []string
	by := map[string]Figure{}
	for _, f := range figs {
		if !contains(targets, f.Target) {
			targets = append(targets, f.Target)
		}
		if !contains(workloads, f.Workload) {
			workloads = append(workloads, f.Workload)
		}
		by[f.Target+"|"+f.Workload] = f
	}
	cpu := false
	for _, f := range figs {
		cpu = cpu || f.CPUPerOp > 0
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "WORKLOAD\t")
	for _, t := range targets {
		fmt.Fprintf(tw, "%s OPS/S\t%s P50\t%s P99\t%s FAILED\t", t, t, t, t)
		if cpu {
			fmt.Fprintf(tw, "%s CPU/OP\t", t)
		}
	}
	if len(targets) == 2 {
		fmt.Fprintf(tw, "%s/%s\t", targets[0], targets[1])
		if cpu {
			fmt.Fprintf(tw, "CPU/OP %s/%s\t", targets[0], targets[1])
		}
	}
	fmt.Fprintln(tw)
	for _, wl := range workloads {
		fmt.Fprintf(tw, "%s\t", wl)
		for _, t := range targets {
			f := by[t+"|"+wl]
			fmt.Fprintf(tw, "%.0f\t%s\t%s\t%d\t", f.OpsPerSec, round(f.P50), round(f.P99), f.Failed)
			if cpu {
				fmt.Fprintf(tw, "%s\t", orDash(f.CPUPerOp > 0, round(f.CPUPerOp).String()))
			}
		}
		if len(targets) == 2 {
			a, b := by[targets[0]+"|"+wl], by[targets[1]+"|"+wl]
			fmt.Fprintf(tw, "%s\t", orDash(b.OpsPerSec > 0, fmt.Sprintf("%.2f", a.OpsPerSec/float64(max(b.OpsPerSec, 1e-9)))))
			if cpu {
				fmt.Fprintf(tw, "%s\t", orDash(a.CPUPerOp > 0 && b.CPUPerOp > 0, fmt.Sprintf("%.2f", float64(a.CPUPerOp)/float64(max(b.CPUPerOp, 1)))))
			}
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range figs {
		if f.FirstErr != "" {
			fmt.Fprintf(w, "%s %s: %d failed, first: %s\n", f.Target, f.Workload, f.Failed, f.FirstErr)
		}
	}
	return writePhases(w, figs)
}

func round(d time.Duration) time.Duration {
	switch {
	case d > time.Second:
		return d.Round(time.Millisecond)
	case d > time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}

// orDash is s where known, else "-".
func orDash(known bool, s string) string {
	if !known {
		return "-"
	}
	return s
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
