package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
)

func init() {
	retentionSubcommands["set-capacity"] = retentionSubcommand{
		summary: "change a state log's byte ceiling: raise it, or give a reservation back",
		run:     (*RetentionCommand).setCapacity,
	}
}

// setCapacity runs `crewlet retention set-capacity --log L --max-bytes N`: one call to
// one node, which changes the log's stream for the whole fleet (its
// configuration is shared). It runs on a node whose state logs are up,
// in every mode.
func (c *RetentionCommand) setCapacity(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crewlet retention set-capacity", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	nf := addNodeFlags(fs)
	log := fs.String("log", "", "the state `log`: tracker, pages, or its stream's name")
	size := fs.String("max-bytes", "", "the new ceiling: `bytes`, or with a unit (8GiB, 512MiB)")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: crewlet retention set-capacity --log LOG --max-bytes SIZE [flags]

Change the byte ceiling of LOG (tracker, pages, or its stream's name) to
SIZE (bytes, or with a unit: 8GiB, 512MiB). A raise is reserved from the
broker's storage limit and refused when it has too little left; a lower
ceiling gives the difference back, never below the bytes the log holds.
The stream's configuration is the fleet's: one call, on any node, changes
it for every node, and a log refusing writes log_full takes them again.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *log == "" || *size == "" {
		return usageErrorf("retention set-capacity needs --log and --max-bytes, such as: crewlet retention set-capacity --log tracker --max-bytes 8GiB")
	}
	n, err := ParseByteSize(*size)
	if err != nil || n <= 0 {
		return usageErrorf("retention set-capacity: --max-bytes %q is not a positive byte size such as 8GiB", *size)
	}
	cl, err := nf.client("retention set-capacity")
	if err != nil {
		return err
	}
	ch, err := cl.SetCapacity(ctx, *log, int64(n))
	if err != nil {
		return nf.failed("retention set-capacity", err)
	}
	if *asJSON {
		return json.NewEncoder(c.Stdout).Encode(ch)
	}
	if !ch.Changed {
		fmt.Fprintf(c.Stdout, "%s (%s) already has a ceiling of %d bytes; it holds %d.\n", ch.Stream, ch.Domain, ch.MaxBytes, ch.Held)
		return nil
	}
	fmt.Fprintf(c.Stdout, "%s (%s): ceiling %d -> %d bytes (ordinary appends up to %d); it holds %d.\n",
		ch.Stream, ch.Domain, ch.Before, ch.MaxBytes, ch.Ordinary, ch.Held)
	return nil
}
