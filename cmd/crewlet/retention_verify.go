package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strings"
)

func init() {
	retentionSubcommands["verify-restore"] = retentionSubcommand{
		summary: "restore the newest snapshot into a scratch database and compare it with the live copy",
		run:     (*RetentionCommand).verifyRestore,
	}
}

// verifyRestore runs `crewlet retention verify-restore`: the node restores
// the newest snapshot of its repository into a scratch database and
// compares every table with its live copy at the snapshot's checkpoint.
// A mismatch, or a restore that is not whole, fails the command.
func (c *RetentionCommand) verifyRestore(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crewlet retention verify-restore", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	nf := addNodeFlags(fs)
	asJSON := fs.Bool("json", false, "print the report as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet retention verify-restore [flags]\n\nRestore the newest snapshot into a scratch database on the node and compare its table hashes with the live copy at the same checkpoint.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cl, err := nf.client("retention verify-restore")
	if err != nil {
		return err
	}
	r, err := cl.VerifyRestore(ctx)
	if err != nil {
		return nf.failed("retention verify-restore", err)
	}
	if *asJSON {
		if err := json.NewEncoder(c.Stdout).Encode(r); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(c.Stdout, "snapshot %s (sha256 %s, taken_at %s by %s)\n", r.Snapshot.Name, r.Snapshot.SHA256, r.Snapshot.TakenAt.Format("2006-01-02T15:04:05Z07:00"), r.Snapshot.Donor)
		writePoints(c, r.Snapshot.Domains)
		fmt.Fprintf(c.Stdout, "integrity %s; %d tables compared: %s\n", r.Integrity, r.Tables, r.Aligned)
	}
	if !r.OK {
		return fmt.Errorf("retention verify-restore: the restore differs from the live copy (integrity %s; tables differing from the snapshot's live hashes: %s; from the live copy now: %s)",
			r.Integrity, list(r.Mismatched), list(r.LiveMismatched))
	}
	if !*asJSON {
		fmt.Fprintln(c.Stdout, "ok")
	}
	return nil
}

func list(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ", ")
}
