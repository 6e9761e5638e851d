package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/turns"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/opclient"
	"github.com/crewlet/crewlet/internal/token"
)

// RetentionCommand is `crewlet retention`: replication answers and
// operations on a running node (through opclient), with the operator
// token. Each subcommand lives in its own file and registers itself in
// retentionSubcommands.
type RetentionCommand struct {
	*Main
}

// retentionSubcommand is one `crewlet retention <name>`: summary is its
// line in the usage, run gets the arguments after its name.
type retentionSubcommand struct {
	summary string
	run     func(c *RetentionCommand, ctx context.Context, args []string) error
}

// retentionSubcommands is filled by each subcommand's file (init).
var retentionSubcommands = map[string]retentionSubcommand{}

func init() {
	retentionSubcommands["status"] = retentionSubcommand{
		summary: "every data node's positions (seq, applied_through, GEN, lag) and who leads its reader",
		run:     (*RetentionCommand).status,
	}
}

// Run runs `crewlet retention <subcommand>`.
func (c *RetentionCommand) Run(ctx context.Context, args []string) error {
	names := make([]string, 0, len(retentionSubcommands))
	for n := range retentionSubcommands {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(args) == 0 {
		return usageErrorf("retention needs a subcommand: %s", strings.Join(names, ", "))
	}
	if args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprintf(c.Stderr, "Usage: crewlet retention <subcommand> [flags]\n\nSubcommands:\n\n")
		for _, n := range names {
			fmt.Fprintf(c.Stderr, "\t%-14s %s\n", n, retentionSubcommands[n].summary)
		}
		return nil
	}
	sub, ok := retentionSubcommands[args[0]]
	if !ok {
		return usageErrorf("unknown retention subcommand %q: one of %s", args[0], strings.Join(names, ", "))
	}
	return sub.run(c, ctx, args[1:])
}

// nodeFlags are the flags every retention subcommand takes to reach a
// running node: its URL and the operator token.
type nodeFlags struct {
	nodeURL, tokenFile, dataDir *string
}

func addNodeFlags(fs *flag.FlagSet) nodeFlags {
	return nodeFlags{
		nodeURL:   fs.String("node", "http://"+httpedge.DefaultListen, "base `URL` of the running node's HTTP surfaces"),
		tokenFile: fs.String("token-file", "", "`file` holding the operator token (default: $"+token.EnvOperator+", else <--data>/"+token.FileName+")"),
		dataDir:   fs.String("data", "", "data `dir`ectory of the node, to read its "+token.FileName),
	}
}

// client finds the operator token and returns a client of the node; what
// names the subcommand in the messages.
func (f nodeFlags) client(what string) (*opclient.Client, error) {
	tok, found, err := token.Find(*f.tokenFile, token.EnvOperator, *f.dataDir)
	var fe *token.FileError
	switch {
	case errors.As(err, &fe) && errors.Is(fe.Err, token.ErrEmpty):
		return nil, fmt.Errorf("operator token file %s is empty", fe.Path)
	case errors.As(err, &fe):
		return nil, fmt.Errorf("operator token: %w", fe.Err)
	case err != nil:
		return nil, err
	case !found:
		return nil, usageErrorf("%s needs the operator token: --token-file FILE, $%s, or --data DIR (reads DIR/%s)", what, token.EnvOperator, token.FileName)
	}
	return opclient.New(*f.nodeURL, tok), nil
}

// failed words an error of a call to the node: a bad URL is a usage
// mistake, a refusal names its code.
func (f nodeFlags) failed(what string, err error) error {
	var ue *opclient.URLError
	if errors.As(err, &ue) {
		return usageErrorf("--node %q: %v", *f.nodeURL, ue.Err)
	}
	if ref, ok := engine.AsRefusal(err); ok {
		return fmt.Errorf("%s refused %s: %s", what, ref.Code, ref.Message)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// status runs `crewlet retention status`.
func (c *RetentionCommand) status(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("crewlet retention status", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	nf := addNodeFlags(fs)
	asJSON := fs.Bool("json", false, "print the answer as JSON, with the instants (stream_created_at, checkpoint_stored_at)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet retention status [flags]\n\nPrint seq and applied_through per data node and domain, beside GEN and lag,\nand which broker server leads the node's reader (its consumer) since when,\nand which node holds each of the fleet's duties.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cl, err := nf.client("retention status")
	if err != nil {
		return err
	}
	a, err := cl.Retention(ctx)
	if err != nil {
		return nf.failed("retention status", err)
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
// the log has left, where a lag would compare with nothing), and who
// leads the node's consumer since when.
func writeRetentionTable(w io.Writer, a fleet.Answer) error {
	fmt.Fprintf(w, "level: %s (asked %s at %s)\n", a.Level, a.Node, a.AskedAt.Format(time.RFC3339))
	if a.Note != "" {
		fmt.Fprintln(w, a.Note)
	}
	for _, al := range a.Alarms {
		fmt.Fprintf(w, "ALARM %s (%s): %s\n", al.Name, al.Domain, al.Message)
	}
	for _, l := range a.Logs {
		if l.Measured {
			fmt.Fprintf(w, "log %s (%s): GEN %d, seq %d..%d, %d of %d bytes held (ordinary appends stop at %d)\n",
				l.Domain, l.Stream, l.Generation, l.FirstSeq, l.LastSeq, l.Bytes, l.MaxBytes, l.OrdinaryCeiling)
		} else {
			fmt.Fprintf(w, "log %s (%s): GEN %d, end unread\n", l.Domain, l.Stream, l.Generation)
		}
		writeFloorLine(w, l)
	}
	writeDuties(w, a)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NODE\tDOMAIN\tGEN\tSEQ\tAPPLIED_THROUGH\tLAG\tBEAT\tLONGEST_TX\tLONGEST_BATCH\tREADER_LED_BY")
	var applyErrs []string
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
			tx, batch := "-", "-"
			if a := d.Apply; a != nil {
				tx = fmt.Sprintf("%s (%d records, %d rows)", a.LongestTx.Round(time.Millisecond), a.LongestTxRecords, a.LongestTxRows)
				batch = fmt.Sprintf("%d records, %d rows", a.LongestBatch, a.LongestBatchRows)
			}
			node := n.Node
			if d.LogDiverged {
				node += " [log_diverged]"
			} else if d.WrongLog != "" {
				node += " [wrong log: " + d.WrongLog + "]"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\n", node, d.Domain, d.Generation, d.Seq, d.AppliedThrough, lag, beat, tx, batch, readerLed(d.Reader))
			if d.ApplyErr != "" {
				applyErrs = append(applyErrs, fmt.Sprintf("%s %s applier error: %s", n.Node, d.Domain, d.ApplyErr))
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, e := range applyErrs {
		fmt.Fprintln(w, e)
	}
	return writeSeats(w, a.Seats)
}

// writeSeats renders where each seat is held and which nodes claim new
// seats: a node that is not level keeps the seats it holds and claims no
// new ones (judged from its figures above, as the register last heard).
func writeSeats(w io.Writer, s *turns.SeatsAnswer) error {
	if s == nil {
		return nil
	}
	if s.Unread != "" {
		fmt.Fprintf(w, "seats: unreadable (%s)\n", s.Unread)
	}
	for _, n := range s.Nodes {
		claims := "claims new seats"
		if !n.Claims {
			claims = "claims no new seats (not level: " + n.Why + ")"
		}
		fmt.Fprintf(w, "node %s: holds %d seat(s), %s\n", n.Node, n.Holds, claims)
	}
	if len(s.Seats) == 0 {
		fmt.Fprintln(w, "seats: none placed yet")
		return nil
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SEAT\tHELD_BY\tCLAIMED\tFROM\tTURNS\tLAST_TURN")
	for _, p := range s.Seats {
		from := p.From
		if from == "" {
			from = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\n", p.Seat, p.Node, p.ClaimedAt.Format(time.RFC3339), from, p.Turns, p.LastTurnAt.Format(time.RFC3339))
	}
	return tw.Flush()
}

// writeDuties renders who holds each duty of the fleet: the node, since
// when and its last renewal, or vacant (a duty nobody holds until a node
// in service takes it).
func writeDuties(w io.Writer, a fleet.Answer) {
	if a.DutiesUnread != "" {
		fmt.Fprintf(w, "duties: unreadable (%s)\n", a.DutiesUnread)
	}
	for _, d := range a.Duties {
		if d.Node == "" {
			fmt.Fprintf(w, "duty %s: vacant\n", d.Duty)
			continue
		}
		fmt.Fprintf(w, "duty %s: held by %s", d.Duty, d.Node)
		if d.Since != nil {
			fmt.Fprintf(w, " since %s", d.Since.Format(time.RFC3339))
		}
		if d.RenewedAt != nil {
			fmt.Fprintf(w, ", renewed %s", d.RenewedAt.Format(time.RFC3339))
		}
		fmt.Fprintf(w, " (term %d)\n", d.Term)
	}
}

// writeFloorLine renders a log's trim floor and the term that holds it:
// which node, which backup, or the age floor.
func writeFloorLine(w io.Writer, l fleet.LogFigures) {
	switch {
	case l.FloorUnread != "":
		fmt.Fprintf(w, "  trim floor: unreadable (%s); nodes refuse floor_unknown until it is read\n", l.FloorUnread)
	case l.Floor == nil || l.Floor.Term == "":
		fmt.Fprintf(w, "  trim floor: 0, nothing trimmed yet\n")
	default:
		fmt.Fprintf(w, "  trim floor: %d, held by %s: %s (trimmed by %s at %s)\n", l.Floor.Through, l.Floor.Term, l.Floor.Holder,
			l.Floor.By, l.Floor.At.Format(time.RFC3339))
	}
}

// readerLed words who leads a node's consumer: "n2 since <instant>",
// "electing" while its group has no leader (the node receives nothing),
// "-" where it could not be read.
func readerLed(r *fleet.ReaderLead) string {
	switch {
	case r == nil:
		return "-"
	case r.Leader == "":
		return "electing"
	case r.Since != nil:
		return r.Leader + " since " + r.Since.Format(time.RFC3339)
	}
	return r.Leader
}
