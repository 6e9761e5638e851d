package peerbench

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// FloorTarget names the bare floor's figures (Floor).
const FloorTarget = "floor"

// WriteTable prints one row per workload: each target's ops/s, p50, p99,
// failures and, where known, CPU per operation and resident memory (RSS
// and PSS: Resident); the
// bare floor's ops/s and p50 (the Floor target's for the writes and
// linearizable reads, else the HTTP round trip at the same concurrency);
// where there are two targets besides the floor, the first's throughput
// as a ratio of the second's and its CPU per operation as a ratio of the
// second's (below 1: it spent less); and the first's p50 as a ratio of the
// floor's. Then the same job's SQL alone (SQLFloor) where it ran, and,
// where a target said, where its writes spent their time.
func WriteTable(w io.Writer, figs []Figure) error {
	var targets, workloads []string
	by := map[string]Figure{}
	for _, f := range figs {
		if f.Target != FloorTarget && f.Target != SQLFloorTarget && !contains(targets, f.Target) {
			targets = append(targets, f.Target)
		}
		if !contains(workloads, f.Workload) {
			workloads = append(workloads, f.Workload)
		}
		by[f.Target+"|"+f.Workload] = f
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "WORKLOAD\t")
	for _, t := range targets {
		fmt.Fprintf(tw, "%s OPS/S\tP50\tP99\tFAILED\tCPU/OP\tRSS\tPSS\t", t)
	}
	fmt.Fprint(tw, "FLOOR OPS/S\tFLOOR P50\t")
	if len(targets) == 2 {
		fmt.Fprintf(tw, "%s/%s\tCPU/OP %[1]s/%[2]s\t", targets[0], targets[1])
	}
	if len(targets) > 0 {
		fmt.Fprintf(tw, "P50 %s/floor\t", targets[0])
	}
	fmt.Fprintln(tw)
	for _, wl := range workloads {
		fmt.Fprintf(tw, "%s\t", wl)
		for _, t := range targets {
			f, ok := by[t+"|"+wl]
			if !ok {
				fmt.Fprint(tw, "-\t-\t-\t-\t-\t-\t-\t")
				continue
			}
			fmt.Fprintf(tw, "%.0f\t%s\t%s\t%d\t%s\t%s\t%s\t", f.OpsPerSec, round(f.P50), round(f.P99), f.Failed,
				orDash(f.CPUPerOp > 0, round(f.CPUPerOp).String()), orDash(f.RSS > 0, mib(f.RSS)), orDash(f.PSS > 0, mib(f.PSS)))
		}
		fl, hasFloor := floorOf(by, targets, wl)
		fmt.Fprintf(tw, "%s\t%s\t", orDash(hasFloor, fmt.Sprintf("%.0f", fl.OpsPerSec)), orDash(hasFloor, round(fl.P50).String()))
		if len(targets) == 2 {
			a, aok := by[targets[0]+"|"+wl]
			b, bok := by[targets[1]+"|"+wl]
			fmt.Fprintf(tw, "%s\t%s\t", orDash(aok && bok && b.OpsPerSec > 0, ratio(a.OpsPerSec, b.OpsPerSec)),
				orDash(aok && bok && a.CPUPerOp > 0 && b.CPUPerOp > 0, ratio(float64(a.CPUPerOp), float64(b.CPUPerOp))))
		}
		if len(targets) > 0 {
			a, aok := by[targets[0]+"|"+wl]
			fmt.Fprintf(tw, "%s\t", orDash(aok && hasFloor && fl.P50 > 0, ratio(float64(a.P50), float64(fl.P50))))
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
	if err := writeSQLFloor(w, by, targets, workloads); err != nil {
		return err
	}
	if err := writePhases(w, figs); err != nil {
		return err
	}
	return writeDrains(w, figs)
}

// writeSQLFloor holds each target's CPU per operation against the same
// job's SQL alone on this build's SQLite (SQLFloor), workload by workload:
// how many times the SQL's own cost each target spent.
func writeSQLFloor(w io.Writer, by map[string]Figure, targets, workloads []string) error {
	var rows []string
	for _, wl := range workloads {
		if _, ok := by[SQLFloorTarget+"|"+wl]; ok {
			rows = append(rows, wl)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	tw := section(w, "the same job's SQL alone (rqlite's statements on this build's SQLite, in the bench's process): the floor the driver sets under each workload")
	fmt.Fprint(tw, "WORKLOAD\tSQL OPS/S\tSQL P50\tSQL CPU/OP\t")
	for _, t := range targets {
		fmt.Fprintf(tw, "CPU/OP %s/sql\t", t)
	}
	fmt.Fprintln(tw)
	for _, wl := range rows {
		f := by[SQLFloorTarget+"|"+wl]
		fmt.Fprintf(tw, "%s\t%.0f\t%s\t%s\t", wl, f.OpsPerSec, round(f.P50), orDash(f.CPUPerOp > 0, round(f.CPUPerOp).String()))
		for _, t := range targets {
			a, ok := by[t+"|"+wl]
			fmt.Fprintf(tw, "%s\t", orDash(ok && a.CPUPerOp > 0 && f.CPUPerOp > 0, ratio(float64(a.CPUPerOp), float64(f.CPUPerOp))))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// writeDrains says, for each write workload of a target whose processes
// the bench read, how long they stayed busy after a measurement (the mean
// of a round), the work its writes left behind: that CPU is in CPU/OP.
func writeDrains(w io.Writer, figs []Figure) error {
	some := figuresWhere(figs, func(f Figure) bool { return f.Drain > 0 })
	if len(some) == 0 {
		return nil
	}
	tw := section(w, "after the writes, how long the servers stayed busy before they fell quiet (the mean of a round; in CPU/OP)")
	fmt.Fprintln(tw, "TARGET\tWORKLOAD\tBUSY AFTER\t")
	for _, f := range some {
		fmt.Fprintf(tw, "%s\t%s\t%s\t\n", f.Target, f.Workload, round(f.Drain))
	}
	return tw.Flush()
}

// section begins a table under the main one: a blank line, its heading,
// then the writer its rows go to (flushed by the caller).
func section(w io.Writer, heading string) *tabwriter.Writer {
	fmt.Fprintf(w, "\n%s:\n", heading)
	return tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
}

// floorOf is the bare floor a workload's figures are held against: the
// Floor target's own run of it where it has one (writes, linearizable
// reads), else, for a read, the first target's HTTP round trip at the
// same concurrency. The HTTP floor has no floor but itself.
func floorOf(by map[string]Figure, targets []string, wl string) (Figure, bool) {
	if f, ok := by[FloorTarget+"|"+wl]; ok {
		return f, true
	}
	kind, conc, _ := strings.Cut(wl, " ")
	if len(targets) == 0 || Kind(kind).writes() || Kind(kind) == HTTPFloor {
		return Figure{}, false
	}
	f, ok := by[targets[0]+"|"+string(HTTPFloor)+" "+conc]
	return f, ok
}

func ratio(a, b float64) string { return fmt.Sprintf("%.2f", a/b) }

// mib is a byte count in MiB.
func mib(b int64) string { return fmt.Sprintf("%dM", b>>20) }

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

// figuresWhere keeps the figures for which keep says so, in order.
func figuresWhere(figs []Figure, keep func(Figure) bool) []Figure {
	var out []Figure
	for _, f := range figs {
		if keep(f) {
			out = append(out, f)
		}
	}
	return out
}
