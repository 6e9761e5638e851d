package fleet

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"
)

// WriteTable renders the answer as `crewlet retention status` prints it:
// the level, each log's range, then one row per node and domain with GEN,
// seq, applied_through and lag ("left gen N" for a position in a
// generation the log has left).
func (a Answer) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "level: %s (asked %s at %s)\n", a.Level, a.Node, a.AskedAt.Format(time.RFC3339))
	if a.Note != "" {
		fmt.Fprintln(w, a.Note)
	}
	for _, l := range a.Logs {
		if l.Measured {
			fmt.Fprintf(w, "log %s (%s): GEN %d, seq %d..%d\n", l.Domain, l.Stream, l.Generation, l.FirstSeq, l.LastSeq)
		} else {
			fmt.Fprintf(w, "log %s (%s): GEN %d, end unread\n", l.Domain, l.Stream, l.Generation)
		}
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDOMAIN\tGEN\tSEQ\tAPPLIED_THROUGH\tLAG\tBEAT")
	for _, n := range a.Nodes {
		for _, d := range n.Domains {
			lag := "-"
			switch {
			case d.LeftGen != 0:
				lag = fmt.Sprintf("left gen %d", d.LeftGen)
			case d.Lag != nil && d.Lag.Seconds != nil:
				lag = fmt.Sprintf("%d (%.1fs)", d.Lag.Seq, *d.Lag.Seconds)
			case d.Lag != nil:
				lag = fmt.Sprint(d.Lag.Seq)
			}
			beat := "not yet"
			if !d.BeatAt.IsZero() {
				beat = d.BeatAt.Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\n", n.Node, d.Domain, d.Generation, d.Seq, d.AppliedThrough, lag, beat)
		}
	}
	return tw.Flush()
}
