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
// CPU its own processes spent and the memory they hold, where the bench
// started them (cpu.go, memory.go), and where a Crewlet fleet's writes
// spent their time, from its nodes' /metrics (phases.go). Two floors run
// beside the targets in the bench's own process: the bare append and
// checkpoint loop a write or linearizable read is held against
// (floor.go), and the same job's SQL alone on this build's SQLite
// (sqlfloor.go).
package peerbench

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crewlet/crewlet/engine/metrics"
)

// Target is one system under test, reached over its HTTP API.
type Target interface {
	// Name labels the target's columns ("crewlet", "rqlite").
	Name() string
	// Setup creates what the workloads of the plan need (projects, items,
	// the search corpus; tables and rows). It is called once, before the
	// first round.
	Setup(ctx context.Context, p Plan) error
	// Supports says whether the target has an operation of this kind: a
	// kind it has not is left out of its rows, never counted as failed.
	Supports(k Kind) bool
	// Do runs one operation of the workload; worker and i make writes
	// distinct. An operation that ended without its promise (a write not
	// applied, a read refused) returns an error and is counted as failed.
	Do(ctx context.Context, w Workload, worker, i int) error
	Close()
}

// NodeOf is the base URL (no trailing slash) of the node of bases that
// worker talks to: the workers take the nodes in turn from the first-th
// (0-based), so worker 0, and with it every c=1 run, talks to that one.
// The nodes keep their order, and with it their numbers in profiles and
// in what the bench says of them.
func NodeOf(bases []string, first, worker int) string {
	return strings.TrimSuffix(bases[(first+worker)%len(bases)], "/")
}

// Workload is one kind of operation at one concurrency.
type Workload struct {
	Kind        Kind
	Concurrency int
}

// Kind is what a workload's operation does.
type Kind string

// The kinds. The same-job ones do on each target what a work tracker
// does (samejob.go says how on rqlite): create an item, update it under
// if_match, read it with its tags, watchers and fields (stale, and
// linearizable), search the corpus, change every item of a project at
// once. The floors are the bare round trips: HTTP (a health check) and,
// on Crewlet, MCP (a ping on the same session the tools use). The toy
// kinds are the first bench's rows, kept for comparison with earlier
// runs: a write of one two-column row and reads of it — unlike work.
const (
	HTTPFloor    Kind = "http_floor"
	MCPFloor     Kind = "mcp_floor"
	Create       Kind = "create"
	Update       Kind = "update"
	Get          Kind = "get"
	Linearizable Kind = "read_linearizable"
	GetMCP       Kind = "get_mcp"
	Search       Kind = "search"
	Bulk         Kind = "bulk"
	ToyWrite     Kind = "toy_write"
	ToyLinear    Kind = "toy_read_linearizable"
	ToyStale     Kind = "toy_read_stale"
)

func (w Workload) String() string { return fmt.Sprintf("%s c=%d", w.Kind, w.Concurrency) }

// DefaultWorkloads are the rows: the floors, each same-job kind
// alone and at c=64 (bulk alone: it is the largest transaction either
// target takes), then the toy rows.
func DefaultWorkloads() []Workload {
	var out []Workload
	for _, k := range []Kind{HTTPFloor, MCPFloor, Create, Update, Get, Linearizable, GetMCP, Search} {
		out = append(out, Workload{k, 1}, Workload{k, 64})
	}
	out = append(out, Workload{Bulk, 1})
	for _, k := range []Kind{ToyWrite, ToyLinear, ToyStale} {
		out = append(out, Workload{k, 1}, Workload{k, 64})
	}
	return out
}

// Plan is what the targets set up for a run.
type Plan struct {
	// Corpus is how many items the search reads; BulkItems how many of
	// them one bulk update changes (one project of the corpus).
	Corpus, BulkItems int
	// AlwaysCorpus files the corpus whatever the run measures (--corpus
	// given): a run of writes alone then meets the database a whole run
	// does, rather than one of a few rows.
	AlwaysCorpus bool
	// Kinds are the kinds the run measures: what is not measured is not
	// set up.
	Kinds map[Kind]bool
}

// DefaultCorpus and DefaultBulk are the sizes: FTS5 over 100 000
// items, and the maximal bulk update (tracker.MaxBulkItems).
const (
	DefaultCorpus = 100000
	DefaultBulk   = 20000
)

// Workers is how many distinct items the update and get workloads use:
// one per worker at the highest concurrency, so that no two workers
// update the same item and an if_match never meets another's write.
const Workers = 64

// PlanFor is the plan of a run of ws.
func PlanFor(ws []Workload, corpus, bulk int) Plan {
	p := Plan{Corpus: corpus, BulkItems: min(bulk, corpus), Kinds: map[Kind]bool{}}
	for _, w := range ws {
		p.Kinds[w.Kind] = true
	}
	return p
}

// filesCorpus says whether the set-up files the corpus: when a workload
// reads it (search, bulk), or when the run asked for it.
func (p Plan) filesCorpus() bool { return p.AlwaysCorpus || p.Kinds[Search] || p.Kinds[Bulk] }

// corpusProjects is how many projects the corpus is filed in: BulkItems
// each, the last one holding the rest.
func (p Plan) corpusProjects() int { return (p.Corpus + p.BulkItems - 1) / p.BulkItems }

// corpusProject is the key of the corpus's project j (the bulk
// workload's is the first).
func corpusProject(j int) string { return fmt.Sprintf("C%d", j) }

// Config is one run.
type Config struct {
	Targets   []Target
	Workloads []Workload
	Plan      Plan
	Rounds    int
	PerRound  time.Duration // how long each workload runs per target per round
	// Progress, when set, gets one line per finished measurement.
	Progress io.Writer
	// Profiles, when set, is the directory where the first round's CPU
	// profile of each workload on each server of a Profiler is written,
	// and for writes a second one of what they left behind (AfterSuffix).
	Profiles string
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
	// operation completed, where the bench started them (CPUMeter): for
	// writes, until the processes fell quiet after the measurement
	// (costs.go), which Drain says took this long in a round, on average.
	CPUPerOp time.Duration `json:"cpu_per_op_ns,omitempty"`
	// Drain is how long the processes stayed busy after a round of
	// writes, the mean over the rounds.
	Drain time.Duration `json:"drain_ns,omitempty"`
	// RSS is the most resident memory the target's server processes held
	// together at the end of a round of this workload (Memory).
	RSS int64 `json:"rss_bytes,omitempty"`
	// PSS is the same as a proportional set size: each page counted once
	// however many of the processes' mappings hold it (Resident).
	PSS int64 `json:"pss_bytes,omitempty"`
}

// acc gathers one target's rounds of one workload.
type acc struct {
	rates    []float64
	lats     []time.Duration
	ok, fail int
	firstErr string
	target   string
	workload string
	costs    costs
}

// Run sets every target up, then runs the rounds.
func Run(ctx context.Context, c Config) ([]Figure, error) {
	for _, t := range c.Targets {
		if err := t.Setup(ctx, c.Plan); err != nil {
			return nil, fmt.Errorf("%s: set-up: %w", t.Name(), err)
		}
		// What the set-up left behind (a Crewlet node embeds the whole
		// search corpus on its duty) must not run under the first
		// rounds, this target's or another's on the same machine.
		if meter, ok := t.(CPUMeter); ok {
			took, err := settle(ctx, meter, setupDrainMax)
			if err == nil && c.Progress != nil {
				fmt.Fprintf(c.Progress, "set-up of %s: quiet after %s\n", t.Name(), took.Round(time.Millisecond))
			}
		}
	}
	accs := map[string]*acc{}
	var order []string
	for r := 0; r < c.Rounds; r++ {
		for _, w := range c.Workloads {
			for k := range c.Targets {
				// Alternate which target goes first, round by round.
				t := c.Targets[(k+r)%len(c.Targets)]
				if !t.Supports(w.Kind) {
					continue
				}
				key := t.Name() + "|" + w.String()
				a := accs[key]
				if a == nil {
					a = &acc{target: t.Name(), workload: w.String(), costs: costs{phases: metrics.PhaseTotals{}}}
					accs[key] = a
					order = append(order, key)
				}
				measured, profiled := measurementProfiles(ctx, c, t, w, r)
				m := measureCosts(ctx, t, w, c.PerRound, &a.costs, measured)
				profiled()
				a.add(m)
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
			WritePhases: a.costs.phases.Means(), CPUPerOp: a.costs.perOp(a.ok), RSS: a.costs.rss, PSS: a.costs.pss,
			Drain: a.costs.drain / time.Duration(len(a.rates))})
	}
	return out, nil
}

func (a *acc) add(m measurement) {
	a.rates = append(a.rates, float64(len(m.lats))/m.elapsed.Seconds())
	a.lats = append(a.lats, m.lats...)
	a.ok += len(m.lats)
	a.fail += m.failed
	if a.firstErr == "" {
		a.firstErr = m.firstErr
	}
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
