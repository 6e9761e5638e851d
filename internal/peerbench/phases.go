package peerbench

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/metrics"
)

// Phaser is a target that can say where its writes spent their time: the
// rounds of writes its nodes have observed in each phase so far, and the
// time they spent there, summed over the nodes.
type Phaser interface {
	WritePhases(ctx context.Context) (metrics.PhaseTotals, error)
}

// WritePhases reads every node's /metrics and sums the tracker's write
// phases over them (the bench's writes are work items).
func (c *Crewlet) WritePhases(ctx context.Context) (metrics.PhaseTotals, error) {
	sum := metrics.PhaseTotals{}
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
		f := fams[metrics.WritePhaseMetric]
		if f == nil {
			return nil, fmt.Errorf("/metrics of %s has no %s: a node older than this bench", c.BaseURLs[i], metrics.WritePhaseMetric)
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["domain"] != string(engine.DomainTracker) {
				continue
			}
			sum.Add(metrics.PhaseTotals{labels["phase"]: metrics.PhaseTotalOf(m.GetHistogram())})
		}
	}
	return sum, nil
}

// writePhases prints, under the table, where each target's writes spent
// their time: the mean of each phase over a write's rounds.
func writePhases(w io.Writer, figs []Figure) error {
	rows := figuresWhere(figs, func(f Figure) bool { return len(f.WritePhases) > 0 })
	if len(rows) == 0 {
		return nil
	}
	tw := section(w, "where the writes spent their time, the mean of a write's round in each phase (from the nodes' /metrics)")
	fmt.Fprint(tw, "TARGET\tWORKLOAD\t")
	for _, p := range metrics.Phases {
		fmt.Fprintf(tw, "%s\t", strings.ToUpper(p))
	}
	fmt.Fprintln(tw)
	for _, f := range rows {
		fmt.Fprintf(tw, "%s\t%s\t", f.Target, f.Workload)
		for _, p := range metrics.Phases {
			took, ok := f.WritePhases[p]
			if !ok {
				fmt.Fprint(tw, "-\t") // no round had it: a check, outside creates
				continue
			}
			fmt.Fprintf(tw, "%s\t", round(took))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}
