// Command crewlet runs a Crewlet node and its surfaces.
//
//	crewlet serve     run a node: the embedded broker and store, and the
//	                  operator MCP over HTTP at /operator/mcp
//	crewlet mcp       MCP over stdio for one assistant, on an embedded node
//	                  (--data) or against a running one (--node URL)
//	crewlet validate  check a config file and say what it cannot check
//	crewlet retention replication status and operations on a running node
//	                  (status, set-capacity, backup, verify-restore)
//	crewlet bench     the same workloads against Crewlet and rqlite
//	                  (internal/peerbench), side by side
//
// This package only wires flags to config to the engine, the MCP layer
// and the HTTP edge; the one thing it does itself is start the child
// processes crewlet bench measures.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"
	// The IANA zones ride in the binary: company.timezone resolves on a
	// host without a zoneinfo database too.
	_ "time/tzdata"

	"github.com/crewlet/crewlet/domains"

	"github.com/crewlet/crewlet/engine"
)

// version is set at build time with -ldflags "-X main.version=…"; unset, it
// is the module version from the build info, or "dev".
var version = ""

// Version is the version the MCP surfaces report.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// shutdownTimeout bounds a graceful stop before connections are cut.
const shutdownTimeout = 10 * time.Second

func main() {
	// An MCP client closes our stdin and stderr together; a log line
	// written after that must fail with EPIPE, not kill the process
	// before the node has closed.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal starts a graceful stop, a second one
		// takes the default action and ends the process at once.
		<-ctx.Done()
		stop()
	}()
	// Everything a node creates is its own: the replicated database and
	// its -wal, the broker's store tree, the data directory and the
	// token. Set once here, before anything is created, rather than
	// chmod after the fact: the embedded nats-server and SQLite create
	// files of their own, and a file is readable from its creation on.
	ownerOnlyFiles()
	m := NewMain()
	err := m.Run(ctx, os.Args[1:])
	stop()
	os.Exit(m.ExitCode(err))
}

// Main is the program: its streams and its subcommands.
type Main struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr *os.File

	// Domains are the domains the node runs and serves; nil: the
	// build's (domains.Builtin). A test adds one of its own here.
	Domains domains.Registry

	// jsonLog is the logger of a command that logs JSON, once it has
	// one: its failure is then a log line too, not a line of text.
	jsonLog *slog.Logger
}

// registry is the domains the commands run.
func (m *Main) registry() domains.Registry {
	if m.Domains == nil {
		return domains.Builtin()
	}
	return m.Domains
}

// logsTo records the command's logger; a JSON one also takes the
// command's failure, and every library writing through Go's log package
// goes through it.
func (m *Main) logsTo(logger *slog.Logger, format string) {
	routeLibraryLogs(logger)
	if LogsJSON(m.Stderr, format) {
		m.jsonLog = logger
	}
}

// NewMain returns a Main on the process's streams.
func NewMain() *Main {
	return &Main{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}
}

// Run runs the subcommand named by args[0]. A subcommand stopped by a
// signal (ctx cancelled) has succeeded.
func (m *Main) Run(ctx context.Context, args []string) error {
	err := m.run(ctx, args)
	if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

func (m *Main) run(ctx context.Context, args []string) error {
	cmd, rest := "", []string(nil)
	if len(args) > 0 {
		cmd, rest = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return (&ServeCommand{Main: m}).Run(ctx, rest)
	case "mcp":
		return (&MCPCommand{Main: m}).Run(ctx, rest)
	case "validate":
		return (&ValidateCommand{Main: m}).Run(ctx, rest)
	case "retention":
		return (&RetentionCommand{Main: m}).Run(ctx, rest)
	case "bench":
		return (&BenchCommand{Main: m}).Run(ctx, rest)
	case "version", "--version":
		fmt.Fprintln(m.Stdout, "crewlet", Version())
		return nil
	case "", "help", "-h", "-help", "--help":
		fmt.Fprint(m.Stderr, usage)
		if cmd == "" {
			return flag.ErrHelp
		}
		return nil
	default:
		return usageErrorf("unknown command %q", cmd)
	}
}

// ExitCode reports err on stderr and returns the process exit code: 0 on
// success, 2 for a usage mistake, 1 for anything else.
func (m *Main) ExitCode(err error) int {
	var ue *usageError
	switch {
	case err == nil:
		return 0
	case errors.Is(err, errHelpAsked):
		// Asked for: the flags went to stderr, as Go's flag package does,
		// and the command did what it was asked (its flag package exits 0).
		return 0
	case errors.Is(err, flag.ErrHelp):
		// No command at all: the usage went to stderr as a mistake.
		return 2
	case errors.As(err, &ue):
		fmt.Fprintf(m.Stderr, "crewlet: %s\nRun 'crewlet help' for usage.\n", ue.msg)
		return 2
	case m.jsonLog != nil:
		m.jsonLog.Error("command_failed", engine.LogErr, err.Error())
		return 1
	default:
		fmt.Fprintf(m.Stderr, "crewlet: %s\n", err)
		return 1
	}
}

const usage = `Crewlet is an MCP-native replicated work tracker and knowledge base.

Usage:

	crewlet <command> [flags]

Commands:

	serve     run a node and serve the operator MCP at /operator/mcp
	mcp       serve MCP over stdio (embedded node on --data, or --node URL)
	validate  check a config file
	retention replication status and operations on a running node (crewlet retention -h)
	bench     the same workloads against Crewlet and, given one, rqlite, side by side
	version   print the version

Run 'crewlet <command> -h' for a command's flags.
`

// errHelpAsked is a command's -h: its flags are printed and it exits 0,
// as a program built on Go's flag package alone does.
var errHelpAsked = errors.New("help asked for")

// usageError is a mistake on the command line: it is printed with a hint
// to the usage and exits 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// parseFlags parses args into fs, turning a flag mistake into a usageError
// (the flag package has already printed what was wrong and the flags).
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return errHelpAsked
		}
		return &usageError{msg: err.Error()}
	}
	if fs.NArg() > 0 {
		return usageErrorf("%s: unexpected argument %q", fs.Name(), fs.Arg(0))
	}
	return nil
}

// flagSet reports whether the flag name was given on the command line.
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == name {
			set = true
		}
	})
	return set
}
