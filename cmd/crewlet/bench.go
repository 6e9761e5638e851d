package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine/embed"
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
	replicas           int
	rounds             int
	perRound           time.Duration
	kinds              string
	corpus, bulk       int
	alwaysCorpus       bool
	floor              bool
	asJSON             bool
	profiles           string
	embedder           string
	firstNode          int
}

func (c *BenchCommand) parse(args []string) (benchOptions, error) {
	var o benchOptions
	fs := flag.NewFlagSet("crewlet bench", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	fs.Var(&o.nodes, "node", "base `URL` of a running Crewlet node (repeat for a fleet); default: start one (a fleet of --replicas) in a scratch directory")
	fs.StringVar(&o.tokenFile, "token-file", "", "`file` holding the nodes' operator token (default: $"+token.EnvOperator+", else <--data>/"+token.FileName+")")
	fs.StringVar(&o.dataDir, "data", "", "data `dir`ectory of the node, to read its "+token.FileName)
	fs.Var(&o.rqlites, "rqlite", "base `URL` of a running rqlite node (repeat for a cluster)")
	fs.StringVar(&o.rqlited, "rqlited", "", "`path` of an rqlited binary you built: start an rqlite node (a cluster of --replicas) in a scratch directory beside Crewlet")
	fs.IntVar(&o.replicas, "replicas", 1, "how many nodes the targets the bench starts itself have: a Crewlet fleet on loopback whose logs are replicated this many times and, with --rqlited, an rqlite cluster of as many nodes (1 to 5)")
	fs.IntVar(&o.rounds, "rounds", 3, "rounds; each runs every workload on every target, the order alternating")
	fs.DurationVar(&o.perRound, "duration", 5*time.Second, "how long each workload runs per target per round")
	fs.StringVar(&o.kinds, "workloads", "", "comma-separated kinds to run ("+kindNames()+"; toy for the three toy kinds); default all")
	fs.IntVar(&o.corpus, "corpus", peerbench.DefaultCorpus, "how many items the search workload reads, filed on both targets at set-up when search or bulk runs, or whatever runs when this flag is given")
	fs.IntVar(&o.bulk, "bulk-items", peerbench.DefaultBulk, "how many items one bulk update changes (one project of the corpus; at most the tracker's bulk maximum)")
	fs.BoolVar(&o.floor, "floor", true, "run the bare floor (embedded brokers and a SQLite checkpoint in the bench's own process) beside the targets")
	fs.BoolVar(&o.asJSON, "json", false, "print the figures as JSON")
	fs.StringVar(&o.profiles, "profile", "", "`dir`ectory to write a CPU profile of every server for the first round of each workload (<target>-<workload>-c<N>-<server>.pprof; read with go tool pprof -top); the nodes the bench starts serve them (crewlet serve --pprof), a --node must have been started with --pprof")
	fs.StringVar(&o.embedder, "embedder", embed.ProviderNone, "embedder.provider of the Crewlet nodes the bench starts: none (the same job as rqlite's, which embeds nothing) or builtin (the default of crewlet serve: every create and edit is also embedded, on the embedding duty)")
	fs.IntVar(&o.firstNode, "first-node", 1, "which `node` of each target the first worker talks to, counted from 1 in the order the nodes are given or started: every c=1 run is on it alone, and a concurrent run's workers go round the nodes from it (1 to --replicas)")
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
	if o.corpus < 1 || o.bulk < 1 || o.bulk > peerbench.DefaultBulk {
		return o, usageErrorf("--corpus must be positive and --bulk-items 1 to %d", peerbench.DefaultBulk)
	}
	if _, err := workloads(o.kinds); err != nil {
		return o, err
	}
	if o.replicas < 1 || o.replicas > 5 {
		return o, usageErrorf("--replicas must be 1 to 5 (a JetStream stream has at most five replicas)")
	}
	if o.firstNode < 1 || o.firstNode > 5 {
		return o, usageErrorf("--first-node must be 1 to 5: a node of each target, counted from 1")
	}
	if o.embedder != embed.ProviderNone && o.embedder != embed.ProviderBuiltin {
		return o, usageErrorf("--embedder must be none or builtin")
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	o.alwaysCorpus = set["corpus"]
	if set["embedder"] && len(o.nodes) > 0 {
		return o, usageErrorf("--embedder configures the nodes the bench starts itself, and with --node it starts none: leave --embedder out")
	}
	if o.replicas > 1 && len(o.nodes) > 0 && o.rqlited == "" {
		return o, usageErrorf("--replicas sizes the targets the bench starts itself, and with --node and no --rqlited it starts none: leave --replicas out")
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
	cw, cg, err := c.crewletTarget(ctx, o, scratch)
	defer cg.stop()
	if err != nil {
		return err
	}
	first := []string{"crewlet " + peerbench.NodeOf(cw.BaseURLs, cw.First, 0)}
	targets := []peerbench.Target{cw}
	rq, rg, role, err := c.rqliteTarget(ctx, o, scratch)
	defer rg.stop()
	if err != nil {
		return err
	}
	if rq != nil {
		first = append(first, fmt.Sprintf("rqlite %s (%s)", peerbench.NodeOf(rq.BaseURLs, rq.First, 0), role))
		targets = append(targets, rq)
	}
	fmt.Fprintf(c.Stderr, "first worker (every c=1 run) on node %d of each: %s\n", o.firstNode, strings.Join(first, ", "))
	defer func() {
		for _, t := range targets {
			t.Close()
		}
	}()
	if o.floor {
		targets = append(targets, &peerbench.Floor{Dir: filepath.Join(scratch, "floor"), Replicas: o.replicas})
		// One copy's SQL: beside a fleet every node runs it again.
		if o.replicas <= 1 {
			targets = append(targets, &peerbench.SQLFloor{Dir: filepath.Join(scratch, "sql")})
		}
	}
	if o.profiles != "" {
		if err := os.MkdirAll(o.profiles, 0o755); err != nil {
			return fmt.Errorf("--profile: %w", err)
		}
	}
	ws, _ := workloads(o.kinds)
	plan := peerbench.PlanFor(ws, o.corpus, o.bulk)
	plan.AlwaysCorpus = o.alwaysCorpus
	figs, err := peerbench.Run(ctx, peerbench.Config{Targets: targets, Workloads: ws, Plan: plan,
		Rounds: o.rounds, PerRound: o.perRound, Progress: c.Stderr, Profiles: o.profiles})
	if err != nil {
		return err
	}
	if o.asJSON {
		return json.NewEncoder(c.Stdout).Encode(figs)
	}
	return peerbench.WriteTable(c.Stdout, figs)
}

// crewletTarget is the Crewlet target of a run: the fleet it starts in
// scratch, or the --node fleet given, its nodes taken from --first-node.
// The processes it started are the group, which the caller stops.
func (c *BenchCommand) crewletTarget(ctx context.Context, o benchOptions, scratch string) (*peerbench.Crewlet, childGroup, error) {
	var g childGroup
	cw := &peerbench.Crewlet{BaseURLs: o.nodes}
	if len(o.nodes) == 0 {
		var urls []string
		var tok string
		var err error
		if g, urls, tok, err = startBenchFleet(ctx, filepath.Join(scratch, "crewlet"), o.replicas, o.profiles != "", o.embedder); err != nil {
			return nil, nil, err
		}
		cw.BaseURLs, cw.Token, cw.PIDs = urls, tok, g.pids()
		fmt.Fprintf(c.Stderr, "crewlet: %s on loopback, logs at %d replica(s), embedder.provider %s: %s\n", nodesWord(o.replicas), o.replicas, o.embedder, strings.Join(urls, " "))
	} else {
		tok, found, err := token.Find(o.tokenFile, token.EnvOperator, o.dataDir)
		if err != nil {
			return nil, nil, fmt.Errorf("operator token: %w", err)
		}
		if !found {
			return nil, nil, usageErrorf("bench against --node needs the operator token: --token-file FILE, $%s, or --data DIR", token.EnvOperator)
		}
		cw.Token = tok
	}
	var err error
	cw.First, err = firstNode(len(cw.BaseURLs), o.firstNode, "crewlet")
	return cw, g, err
}

// rqliteTarget is the rqlite target of a run, nil where there is none:
// the cluster it starts in scratch (--rqlited) and the nodes given
// (--rqlite), taken from --first-node, with the Raft role of that node.
// The processes it started are the group, which the caller stops.
func (c *BenchCommand) rqliteTarget(ctx context.Context, o benchOptions, scratch string) (*peerbench.Rqlite, childGroup, string, error) {
	var g childGroup
	var pids []int
	nodes := slices.Clone(o.rqlites)
	if o.rqlited != "" {
		var urls []string
		var err error
		if g, urls, err = startRqliteCluster(ctx, o.rqlited, filepath.Join(scratch, "rqlite"), o.replicas); err != nil {
			return nil, nil, "", err
		}
		nodes, pids = append(nodes, urls...), g.pids()
		fmt.Fprintf(c.Stderr, "rqlite: %s on loopback: %s\n", nodesWord(o.replicas), strings.Join(urls, " "))
	}
	if len(nodes) == 0 {
		return nil, g, "", nil
	}
	// The processes are known only where every node is the bench's own.
	if len(pids) != len(nodes) {
		pids = nil
	}
	first, err := firstNode(len(nodes), o.firstNode, "rqlite")
	if err != nil {
		return nil, g, "", err
	}
	role, err := peerbench.RaftState(ctx, nodes[first])
	if err != nil {
		role = "its role unread: " + err.Error()
	}
	return &peerbench.Rqlite{BaseURLs: nodes, First: first, PIDs: pids}, g, role, nil
}

// firstNode is the index of --first-node's node (counted from 1) among
// a target's n nodes: the workers take the nodes in turn from it
// (peerbench.NodeOf), so it is the node of every c=1 run. Where the
// nodes are a cluster's, which of them leads decides whether a write
// takes one more hop, so the node is the user's to choose.
func firstNode(n, flag int, target string) (int, error) {
	if flag > n {
		return 0, usageErrorf("--first-node %d names no node of %s, which has %d", flag, target, n)
	}
	return flag - 1, nil
}

// workloads keeps the default workloads of the kinds named (all when
// none are); "toy" names the toy kinds. A name that is no kind is refused.
func workloads(kinds string) ([]peerbench.Workload, error) {
	all := peerbench.DefaultWorkloads()
	if kinds == "" {
		return all, nil
	}
	want := map[peerbench.Kind]bool{}
	for _, k := range strings.Split(kinds, ",") {
		k = strings.TrimSpace(k)
		if k == "toy" {
			want[peerbench.ToyWrite], want[peerbench.ToyLinear], want[peerbench.ToyStale] = true, true, true
			continue
		}
		if !strings.Contains(","+kindNames()+",", ","+k+",") {
			return nil, usageErrorf("--workloads: %q is not one of %s, toy", k, kindNames())
		}
		want[peerbench.Kind(k)] = true
	}
	var out []peerbench.Workload
	for _, w := range all {
		if want[w.Kind] {
			out = append(out, w)
		}
	}
	return out, nil
}

// kindNames lists the workloads' kinds, comma-separated, in table order.
func kindNames() string {
	var names []string
	for _, w := range peerbench.DefaultWorkloads() {
		if !slices.Contains(names, string(w.Kind)) {
			names = append(names, string(w.Kind))
		}
	}
	return strings.Join(names, ",")
}
