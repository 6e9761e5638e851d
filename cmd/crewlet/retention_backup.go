package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"sort"
	"time"

	"github.com/crewlet/crewlet/engine/snapshot"
)

func init() {
	retentionSubcommands["backup"] = retentionSubcommand{
		summary: "take a snapshot of the node's database into its repository now",
		run:     (*RetentionCommand).backup,
	}
}

// backup runs `crewlet retention backup`: the node takes a snapshot into
// its repository (the broker's object store, or retention.snapshot_dir),
// and the command prints its progress while the copy runs, then the
// snapshot's manifest.
func (c *RetentionCommand) backup(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crewlet retention backup", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	nf := addNodeFlags(fs)
	asJSON := fs.Bool("json", false, "print the snapshot's manifest as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet retention backup [flags]\n\nTake a snapshot of the node's replicated database (rows, checkpoints, the operation ledger and its watermark) into its snapshot repository, printing progress on stderr.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cl, err := nf.client("retention backup")
	if err != nil {
		return err
	}
	m, err := cl.Backup(ctx, func(p snapshot.ProgressLine) {
		fmt.Fprintf(c.Stderr, "crewlet retention backup: copied %d of %d pages (%d%%)\n", p.DonePages, p.TotalPages, p.Percent)
	})
	if err != nil {
		return nf.failed("retention backup", err)
	}
	if *asJSON {
		return json.NewEncoder(c.Stdout).Encode(m)
	}
	fmt.Fprintf(c.Stdout, "snapshot %s\nsha256 %s\nsize %d bytes\ntaken_at %s by %s\n", m.Name, m.SHA256, m.Size, m.TakenAt.Format(time.RFC3339Nano), m.Donor)
	writePoints(c, m.Domains)
	return nil
}

// writePoints prints a manifest's checkpoint per domain, in order.
func writePoints(c *RetentionCommand, pts map[string]snapshot.Point) {
	names := make([]string, 0, len(pts))
	for d := range pts {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		p := pts[d]
		fmt.Fprintf(c.Stdout, "  %s: %s GEN %d seq %d applied_through %d rules %d\n", d, p.Stream, p.Generation, p.Seq, p.AppliedThrough, p.RulesVersion)
	}
}
