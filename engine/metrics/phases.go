package metrics

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// The phases of one round of a write, observed in WritePhaseMetric.
const (
	// PhaseDecide is the read transaction that decides the record.
	PhaseDecide = "decide"
	// PhaseCheck is a write at an expectation of zero (a create) reading
	// the stream's creation instant before it appends; a round that
	// appends at another expectation has none.
	PhaseCheck = "check"
	// PhaseAppend is the append, from the ceiling's check before it is
	// sent to the broker's answer (the check phase comes before it).
	PhaseAppend = "append"
	// PhaseSettle is from the broker's answer to the write's own: this
	// node applying the record, or the winner's where the round lost the
	// arbitration, or the log read that settles a lost answer.
	PhaseSettle = "settle"
)

// Phases are a write round's phases in the order it goes through them.
var Phases = []string{PhaseDecide, PhaseCheck, PhaseAppend, PhaseSettle}

// writePhaseName is the histogram of the phases, and WritePhaseMetric the
// name /metrics gives it (what a reader of the text format looks for).
const (
	writePhaseName   = "statelog_write_phase_seconds"
	WritePhaseMetric = Namespace + "_" + writePhaseName
)

// WritePhase observes one phase of a write's round.
func (d *Domain) WritePhase(phase string, took time.Duration) {
	if d != nil {
		d.r.writePhases.WithLabelValues(d.domain, phase).Observe(took.Seconds())
	}
}

// PhaseTotal is how many rounds of writes observed a phase, and the time
// they spent in it.
type PhaseTotal struct {
	Rounds uint64
	Took   time.Duration
}

// PhaseTotals is each phase's total: since a node started, summed over
// nodes (Add), or between two readings (Since).
type PhaseTotals map[string]PhaseTotal

// Add adds o's totals to t's (another node's, or another measurement's).
func (t PhaseTotals) Add(o PhaseTotals) {
	for p, x := range o {
		s := t[p]
		s.Rounds += x.Rounds
		s.Took += x.Took
		t[p] = s
	}
}

// Since is what t, a later reading, added to before.
func (t PhaseTotals) Since(before PhaseTotals) PhaseTotals {
	out := PhaseTotals{}
	for p, x := range t {
		b := before[p]
		out[p] = PhaseTotal{Rounds: x.Rounds - b.Rounds, Took: x.Took - b.Took}
	}
	return out
}

// Means is the mean time a round spent in each phase some round observed;
// nil when none did.
func (t PhaseTotals) Means() map[string]time.Duration {
	var out map[string]time.Duration
	for p, x := range t {
		if x.Rounds == 0 {
			continue
		}
		if out == nil {
			out = map[string]time.Duration{}
		}
		out[p] = x.Took / time.Duration(x.Rounds)
	}
	return out
}

// WritePhases reads domain's write phases so far: for benchmarks saying
// where a write's time went, and their tests. (A reader over HTTP parses
// WritePhaseMetric from /metrics instead.)
func (r *Registry) WritePhases(domain string) PhaseTotals {
	out := PhaseTotals{}
	for _, p := range Phases {
		var m dto.Metric
		if err := r.writePhases.WithLabelValues(domain, p).(prometheus.Metric).Write(&m); err != nil {
			continue
		}
		out[p] = PhaseTotalOf(m.GetHistogram())
	}
	return out
}

// PhaseTotalOf reads one phase's histogram (from this registry, or parsed
// from /metrics) as rounds and time.
func PhaseTotalOf(h *dto.Histogram) PhaseTotal {
	return PhaseTotal{Rounds: h.GetSampleCount(), Took: seconds(h.GetSampleSum())}
}

// seconds is a histogram's sum of seconds as a duration, to the nearest
// nanosecond (a float sum of exact milliseconds need not be exact).
func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }
