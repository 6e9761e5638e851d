package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
)

func init() {
	retentionSubcommands["reanchor"] = retentionSubcommand{
		summary: "move one state log's rows onto a log that changed under them, in a new generation",
		run:     (*RetentionCommand).reanchor,
	}
}

// reanchor runs `crewlet retention reanchor --log L --case C [--discard]`:
// one call to the node whose rows move, no restart.
func (c *RetentionCommand) reanchor(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crewlet retention reanchor", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	nf := addNodeFlags(fs)
	log := fs.String("log", "", "the state `log`: tracker, pages, or its stream's name")
	kase := fs.String("case", "", "what happened to the log: recreated, restored or abandoned")
	discard := fs.Bool("discard", false, "restored: void the records written to the restored log after the restore (they apply on no node)")
	opID := fs.String("op-id", "", "the `op_id` an earlier reanchor answered, to finish that one")
	asJSON := fs.Bool("json", false, "print the answer as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: crewlet retention reanchor --log LOG --case CASE [flags]

Move this node's rows of LOG onto a log that changed under them, in a new
generation, with no restart (its other logs are untouched):

  recreated  the stream was deleted and created again: follow it from its
             first surviving record
  restored   the broker was restored from an older copy of its store:
             follow it from its end; records written to it after the
             restore were decided against the copy's rows, and --discard
             voids them (they apply on no node)
  abandoned  the log holds a generation only an evicted peer opened:
             follow this node's own checkpoint with that generation void

crewlet retention status and the statelog lines name the case a node
found. The other nodes adopt a snapshot from the new generation.

Flags:
`)
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *log == "" || *kase == "" {
		return usageErrorf("retention reanchor needs --log and --case, such as: crewlet retention reanchor --log tracker --case recreated")
	}
	cl, err := nf.client("retention reanchor")
	if err != nil {
		return err
	}
	out, err := cl.Reanchor(ctx, *log, *kase, *discard, *opID)
	if err != nil {
		return nf.failed("retention reanchor", err)
	}
	if *asJSON {
		return json.NewEncoder(c.Stdout).Encode(out)
	}
	fmt.Fprintf(c.Stdout, "%s (%s): re-anchored (%s) from generation %d at %s to generation %d at %s; the generation record is at %s (op_id %s).\n",
		out.Stream, out.Domain, out.Case, out.FromGeneration, out.Position, out.Generation, out.Cursor, out.Record.Position, out.Record.OpID)
	if out.Discarded > 0 {
		fmt.Fprintf(c.Stdout, "Records written after the restore, through %d, apply on no node.\n", out.Discarded)
	}
	return nil
}
