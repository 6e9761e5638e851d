package peerbench

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Phaser is a target that can say where its writes spent their time: the
// rounds of writes its nodes have observed in each phase so far, and the
// time they spent there, summed over the nodes.
type Phaser interface {
	WritePhases(ctx context.Context) (map[string]PhaseTotal, error)
}

// PhaseTotal is how many rounds of writes observed a phase, and the time
// they spent in it.
type PhaseTotal struct {
	Rounds uint64
	Took   time.Duration
}

// The phases a Crewlet node observes (crewlet_statelog_write_phase_seconds),
// in the order a write's round goes through them.
var phases = []string{"decide", "append", "settle"}

// phaseMetric is the node's histogram of them.
const phaseMetric = "crewlet_statelog_write_phase_seconds"

// WritePhases reads every node's /metrics and sums the tracker's write
// phases over them (the bench's writes are work items).
func (c *Crewlet) WritePhases(ctx context.Context) (map[string]PhaseTotal, error) {
	sum := map[string]PhaseTotal{}
	for i := range c.BaseURLs {
		body, err := c.get(ctx, i, "/metrics")
		if err != nil {
			return nil, err
		}
		parser := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
		if err != nil {
			return nil, fmt.Errorf("/metrics of %s: %w", c.BaseURLs[i], err)
		}
		f := fams[phaseMetric]
		if f == nil {
			return nil, fmt.Errorf("/metrics of %s has no %s: a node older than this bench, or one that has decided no write yet", c.BaseURLs[i], phaseMetric)
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["domain"] != "tracker" {
				continue
			}
			h, t := m.GetHistogram(), sum[labels["phase"]]
			t.Rounds += h.GetSampleCount()
			t.Took += time.Duration(h.GetSampleSum() * float64(time.Second))
			sum[labels["phase"]] = t
		}
	}
	return sum, nil
}

// phaseSums accumulates the phases of one target's measurements of one
// workload: what each measurement added to the target's totals.
type phaseSums map[string]PhaseTotal

func (s phaseSums) add(before, after map[string]PhaseTotal) {
	for _, p := range phases {
		t := s[p]
		t.Rounds += after[p].Rounds - before[p].Rounds
		t.Took += after[p].Took - before[p].Took
		s[p] = t
	}
}

// means is the mean time a round spent in each phase; nil when no round
// was observed.
func (s phaseSums) means() map[string]time.Duration {
	var out map[string]time.Duration
	for p, t := range s {
		if t.Rounds == 0 {
			continue
		}
		if out == nil {
			out = map[string]time.Duration{}
		}
		out[p] = t.Took / time.Duration(t.Rounds)
	}
	return out
}

// writePhases prints, under the table, where each target's writes spent
// their time: the mean of each phase over a write's rounds.
func writePhases(w io.Writer, figs []Figure) error {
	var rows []Figure
	for _, f := range figs {
		if len(f.WritePhases) > 0 {
			rows = append(rows, f)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	fmt.Fprintln(w, "\nwhere the writes spent their time, the mean of a write's round in each phase (from the nodes' /metrics):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "TARGET\tWORKLOAD\t")
	for _, p := range phases {
		fmt.Fprintf(tw, "%s\t", strings.ToUpper(p))
	}
	fmt.Fprintln(tw)
	for _, f := range rows {
		fmt.Fprintf(tw, "%s\t%s\t", f.Target, f.Workload)
		for _, p := range phases {
			fmt.Fprintf(tw, "%s\t", round(f.WritePhases[p]))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
