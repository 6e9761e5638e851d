package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/crewlet/crewlet/internal/peerbench"
	"github.com/crewlet/crewlet/internal/token"
)

// BenchCommand is `crewlet bench`: the same workloads against a Crewlet
// node or fleet and, when given one, an rqlite node or cluster, interleaved
// in one run (internal/peerbench), printed as a table of medians and
// ratios.
type BenchCommand struct {
	*Main
}

// listFlag is a flag that may be given several times.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

type benchOptions struct {
	nodes, rqlites     listFlag
	tokenFile, dataDir string
	rqlited            string
	rounds             int
	perRound           time.Duration
	kinds              string
	asJSON             bool
}

func (c *BenchCommand) parse(args []string) (benchOptions, error) {
	var o benchOptions
	fs := flag.NewFlagSet("crewlet bench", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.Var(&o.nodes, "node", "base `URL` of a running Crewlet node (repeat for a fleet); default: start one in a scratch directory")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` holding the nodes' operator token (default: $"+token.EnvOperator+", else <--data>/"+token.FileName+")")
	fs.StringVar(&o.dataDir, "data", "", "data `dir`ectory of the node, to read its "+token.FileName)
	fs.Var(&o.rqlites, "rqlite", "base `URL` of a running rqlite node (repeat for a cluster)")
	fs.StringVar(&o.rqlited, "rqlited", "", "`path` of an rqlited binary you built: start a one-node rqlite in a scratch directory beside the Crewlet node")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every workload on every target, the order alternating")
	fs.DurationVar(&o.perRound, "duration", 5*time.Second, "how long each workload runs per target per round")
	fs.StringVar(&o.kinds, "workloads", "", "comma-separated kinds to run (http_floor, write, read_linearizable, read_stale); default all")
	fs.BoolVar(&o.asJSON, "json", false, "print the figures as JSON")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet bench [flags]\n\nRun single and concurrent writes, linearizable and stale reads against Crewlet and,\nwhen given one (--rqlite or --rqlited), rqlite over its HTTP API, interleaved.\nrqlite is never downloaded: build it from its source and pass its address or binary.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return o, err
	}
	if o.rounds < 1 || o.perRound <= 0 {
		return o, usageErrorf("--rounds must be at least 1 and --duration positive")
	}
	return o, nil
}

// Run runs `crewlet bench`.
func (c *BenchCommand) Run(ctx context.Context, args []string) error {
	o, err := c.parse(args)
	if err != nil {
		return err
	}
	scratch, err := os.MkdirTemp("", "crewlet-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	cw := &peerbench.Crewlet{BaseURLs: o.nodes}
	if len(o.nodes) == 0 {
		stop, url, tok, err := startBenchNode(ctx, filepath.Join(scratch, "crewlet"))
		if err != nil {
			return err
		}
		defer stop()
		cw.BaseURLs, cw.Token = []string{url}, tok
	} else {
		tok, found, err := token.Find(o.tokenFile, token.EnvOperator, o.dataDir)
		if err != nil {
			return fmt.Errorf("operator token: %w", err)
		}
		if !found {
			return usageErrorf("bench against --node needs the operator token: --token-file FILE, $%s, or --data DIR", token.EnvOperator)
		}
		cw.Token = tok
	}
	targets := []peerbench.Target{cw}
	if o.rqlited != "" {
		stop, url, err := startRqlited(ctx, o.rqlited, filepath.Join(scratch, "rqlite"))
		if err != nil {
			return err
		}
		defer stop()
		o.rqlites = append(o.rqlites, url)
	}
	if len(o.rqlites) > 0 {
		targets = append(targets, &peerbench.Rqlite{BaseURLs: o.rqlites})
	}
	defer func() {
		for _, t := range targets {
			t.Close()
		}
	}()
	figs, err := peerbench.Run(ctx, peerbench.Config{Targets: targets, Workloads: workloads(o.kinds), Rounds: o.rounds, PerRound: o.perRound, Progress: c.Stderr})
	if err != nil {
		return err
	}
	if o.asJSON {
		return json.NewEncoder(c.Stdout).Encode(figs)
	}
	return peerbench.WriteTable(c.Stdout, figs)
}

// workloads keeps the default workloads of the kinds named (all when
// none are).
func workloads(kinds string) []peerbench.Workload {
	all := peerbench.DefaultWorkloads()
	if kinds == "" {
		return all
	}
	var out []peerbench.Workload
	for _, w := range all {
		for _, k := range strings.Split(kinds, ",") {
			if peerbench.Kind(strings.TrimSpace(k)) == w.Kind {
				out = append(out, w)
			}
		}
	}
	return out
}

// startBenchNode runs this binary's `crewlet serve` on a free loopback
// port with its data in dir, and waits for /readyz.
func startBenchNode(ctx context.Context, dir string) (stop func(), url, tok string, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, "", "", err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, "", "", err
	}
	url = fmt.Sprintf("http://127.0.0.1:%d", port)
	stop, err = startChild(ctx, dir, url+"/readyz", exe, "serve", "--data", dir, "--http", fmt.Sprintf("127.0.0.1:%d", port), "--log-format", "json")
	if err != nil {
		return nil, "", "", err
	}
	b, err := os.ReadFile(filepath.Join(dir, token.FileName))
	if err != nil {
		stop()
		return nil, "", "", err
	}
	return stop, url, strings.TrimSpace(string(b)), nil
}

// startRqlited runs a one-node rqlite from the binary at bin with its
// data in dir, and waits for /readyz.
func startRqlited(ctx context.Context, bin, dir string) (stop func(), url string, err error) {
	httpPort, err := freeLoopbackPort()
	if err != nil {
		return nil, "", err
	}
	raftPort, err := freeLoopbackPort()
	if err != nil {
		return nil, "", err
	}
	url = fmt.Sprintf("http://127.0.0.1:%d", httpPort)
	stop, err = startChild(ctx, dir, url+"/readyz", bin, "-http-addr", fmt.Sprintf("127.0.0.1:%d", httpPort),
		"-raft-addr", fmt.Sprintf("127.0.0.1:%d", raftPort), filepath.Join(dir, "data"))
	return stop, url, err
}

// startChild starts a server process with its output in dir/out.log and
// waits until ready answers 200 (two minutes at most, the broker's own
// readiness wait).
func startChild(ctx context.Context, dir, ready, bin string, args ...string) (func(), error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	logf, err := os.Create(filepath.Join(dir, "out.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
	}
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, err := http.Get(ready)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return stop, nil
			}
		}
		select {
		case <-exited:
			out, _ := os.ReadFile(logf.Name())
			return nil, fmt.Errorf("%s exited before it was ready:\n%s", filepath.Base(bin), out)
		case <-ctx.Done():
			stop()
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			stop()
			return nil, errors.New(filepath.Base(bin) + " was not ready within two minutes; its log is in " + logf.Name())
		}
	}
}

func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
