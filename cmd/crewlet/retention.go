package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/rest/restclient"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/token"
)

// RetentionCommand is `crewlet retention`: replication answers from a
// running node's /api/v1/retention (through restclient), with the
// operator token, printed as a table or as the answer's JSON.
type RetentionCommand struct {
	*Main
}

// Run runs `crewlet retention status`.
func (c *RetentionCommand) Run(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "status" {
		return usageErrorf("retention needs a subcommand: status")
	}
	fs := flag.NewFlagSet("crewlet retention status", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	nodeURL := fs.String("node", "http://"+httpedge.DefaultListen, "base `URL` of the running node's HTTP surfaces")
	tokenFile := fs.String("token-file", "", "`file` holding the operator token (default: $"+token.EnvOperator+", else <--data>/"+token.FileName+")")
	dataDir := fs.String("data", "", "data `dir`ectory of the node, to read its "+token.FileName)
	asJSON := fs.Bool("json", false, "print the answer as JSON, with the instants (stream_created_at, checkpoint_stored_at)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet retention status [flags]\n\nPrint seq and applied_through per data node and domain, beside GEN and lag.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args[1:]); err != nil {
		return err
	}
	tok, found, err := token.Find(*tokenFile, token.EnvOperator, *dataDir)
	var fe *token.FileError
	switch {
	case errors.As(err, &fe) && errors.Is(fe.Err, token.ErrEmpty):
		return fmt.Errorf("operator token file %s is empty", fe.Path)
	case errors.As(err, &fe):
		return fmt.Errorf("operator token: %w", fe.Err)
	case err != nil:
		return err
	case !found:
		return usageErrorf("retention status needs the operator token: --token-file FILE, $%s, or --data DIR (reads DIR/%s)", token.EnvOperator, token.FileName)
	}
	a, err := restclient.New(*nodeURL, tok).Retention(ctx)
	if err != nil {
		var ue *restclient.URLError
		if errors.As(err, &ue) {
			return usageErrorf("--node %q: %v", *nodeURL, ue.Err)
		}
		if ref, ok := engine.AsRefusal(err); ok {
			return fmt.Errorf("retention status refused %s: %s", ref.Code, ref.Message)
		}
		return fmt.Errorf("retention status: %w", err)
	}
	if *asJSON {
		// The answer as the node encoded it: the client decodes it into the
		// node's own type, so encoding it again gives the node's bytes.
		return json.NewEncoder(c.Stdout).Encode(a)
	}
	return writeRetentionTable(c.Stdout, a)
}

// writeRetentionTable renders the answer for a person: the level, each
// log's range, then one row per node and domain with GEN, seq,
// applied_through and lag ("left gen N" for a position in a generation
// the log has left, where a lag would compare with nothing).
func writeRetentionTable(w io.Writer, a fleet.Answer) error {
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
