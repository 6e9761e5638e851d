package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/token"
	"github.com/crewlet/crewlet/mcp"
	"github.com/crewlet/crewlet/surfaces"
)

// ServeCommand is `crewlet serve`: one node and its HTTP surfaces.
type ServeCommand struct {
	*Main
}

// serveOptions are the resolved flags and file of one `crewlet serve`.
type serveOptions struct {
	Config    Config          // the file with the flags applied, validated
	HTTP      httpedge.Config // its http.* block, defaults applied
	DataDir   string
	Listen    string // HTTP.Listen
	LogFormat string
	// Pprof serves Go's profiles at /debug/pprof/ behind the operator
	// token (crewlet bench --profile asks its nodes for them).
	Pprof bool
}

func (c *ServeCommand) parse(args []string) (serveOptions, error) {
	fs := flag.NewFlagSet("crewlet serve", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	configPath := fs.String("config", "", "YAML `file` of Tier A fields (node.*, stream.*, store.*, operator.*, http.*)")
	dataDir := fs.String("data", node.DefaultDataDir, "data `dir`ectory: crewlet-replicated.db, stream/, "+token.FileName)
	listen := fs.String("http", "", "HTTP listen `addr`ess (default http.listen, else "+httpedge.DefaultListen+")")
	mode := fs.String("mode", "", "node `mode`: normal, maintenance or seal (default node.mode, else normal)")
	logFormat := fs.String("log-format", LogFormatAuto, "log `format` on stderr: auto, json or text")
	pprof := fs.Bool("pprof", false, "serve Go's runtime profiles at /debug/pprof/ behind the operator token (what crewlet bench --profile reads)")
	filters := addFilterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet serve [flags]\n\nRun a node and serve the operator MCP at http://ADDR/operator/mcp.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return serveOptions{}, err
	}
	var o serveOptions
	if *configPath != "" {
		cfg, err := LoadConfig(*configPath)
		if err != nil {
			return o, err
		}
		o.Config = cfg
	}
	// Flags override the file.
	if *mode != "" {
		o.Config.Node.Mode = *mode
	}
	if *listen != "" {
		o.Config.HTTP.Listen = *listen
	}
	filters.apply(&o.Config.MCP)
	// The file was checked on its own; this checks the flags' values in it.
	if err := o.Config.Validate(); err != nil {
		return o, err
	}
	if *dataDir == "" {
		return o, usageErrorf("--data must name a directory")
	}
	o.DataDir = *dataDir
	o.HTTP = o.Config.HTTPConfig().WithDefaults()
	o.Listen = o.HTTP.Listen
	o.LogFormat = *logFormat
	o.Pprof = *pprof
	return o, nil
}

// Run starts the node, serves HTTP until ctx ends, then shuts down.
func (c *ServeCommand) Run(ctx context.Context, args []string) error {
	o, err := c.parse(args)
	if err != nil {
		return err
	}
	logger, err := NewLogger(c.Stderr, o.LogFormat, slog.LevelInfo)
	if err != nil {
		return err
	}
	// Every line of the node also goes to the MCP clients that ask for it
	// (logging/setLevel).
	relay := mcp.NewLogRelay()
	logger = slog.New(relay.Handler(logger.Handler()))
	c.logsTo(logger, o.LogFormat)
	maxConns, err := connectionLimit(o.HTTP.MaxConnections, logger)
	if err != nil {
		return err
	}

	// Listen first, so the holder line and the printed URL carry the
	// address actually bound (port 0 picks one).
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("http.listen: %w", err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	mcpURL := "http://" + addr + "/operator/mcp"

	reg := c.registry()
	cfg := o.Config.NodeConfig(o.DataDir)
	cfg.Domains = reg.Specs()
	cfg.Logger = logger
	cfg.Holder = "crewlet serve, operator MCP at " + mcpURL
	n, err := node.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer func() {
		if err := n.Close(); err != nil {
			logger.Error("node close failed", engine.LogErr, err)
		}
	}()

	tok, tokenSource, err := token.Operator(o.Config.Operator.Token, o.DataDir)
	if err != nil {
		return err
	}

	opts := httpedge.GuardOptions{
		Token:        tok,
		AllowedHosts: o.HTTP.Hosts(ln.Addr()),
		Logger:       logger,
	}
	// Validated in parse.
	filter, _ := o.Config.MCP.Filter()
	mo := mcp.Options{Version: Version(), Logger: logger, Filter: filter, Applied: n, Logs: relay, Calls: n.Metrics()}
	srv := surfaces.Operator(n, reg, mo)
	// Nodes without the data role reach the estate through this node
	// while its copy is in service, over the broker's client port or a
	// peer's. The estate answers nodes without data, which narrow their
	// own surfaces: it offers every tool whatever this node's filter.
	if err := surfaces.ServeEstate(n, reg, mcp.Options{Version: Version(), Logger: logger}); err != nil {
		return err
	}
	guard := httpedge.NewGuard(opts)
	root := surfaces.HTTP(n, reg, mcp.OperatorHandler(srv, logger), guard, mo)
	if o.Pprof {
		root = httpedge.WithProfiles(root, guard)
	}

	// The edge comes before every route, the guard included.
	limits := httpedge.Limits{MaxBodyBytes: o.HTTP.MaxBodyBytes, MaxConnections: maxConns}.WithDefaults()
	hs := httpedge.Server(root, limits, logger)
	served := make(chan error, 1)
	go func() { served <- hs.Serve(httpedge.Listener(ln, limits.MaxConnections, logger)) }()
	c.announce(logger, n, o, mcpURL, tokenSource, limits)
	return shutdownWhenDone(ctx, hs, served, logger)
}

// connectionLimit is the HTTP connection ceiling: the configured one, or
// the default lowered (and said so) where it does not fit under this
// process's open-file limit.
func connectionLimit(configured int, logger *slog.Logger) (int, error) {
	maxConns, lowered, err := httpedge.FitConnections(configured)
	if err != nil {
		return 0, err
	}
	if lowered {
		logger.Warn("http_max_connections_lowered", "max_connections", maxConns, "default", httpedge.DefaultMaxConnections,
			"reason", "the default does not fit under this process's open-file limit beside the broker and the store; raise the limit (ulimit -n) to serve more")
	}
	return maxConns, nil
}

// announce logs the serving line: where the operator MCP is, where its
// token comes from, the data directory, the edge's limits and, where the
// node takes joins, its join URL.
func (c *ServeCommand) announce(logger *slog.Logger, n *node.Node, o serveOptions, mcpURL, tokenSource string, limits httpedge.Limits) {
	attrs := []any{"node", n.Name(), "operator_mcp", mcpURL, "token", tokenSource, "data", o.DataDir,
		"max_body_bytes", limits.MaxBodyBytes, "max_connections", limits.MaxConnections}
	if u := n.ClientURL(); u != "" {
		attrs = append(attrs, "join_url", u)
	}
	logger.Info("serving", attrs...)
	// In a JSON log the line above says it all; a person at a terminal
	// gets it in words too.
	if !LogsJSON(c.Stderr, o.LogFormat) {
		fmt.Fprintf(c.Stderr, "crewlet serve: operator MCP at %s (bearer token in %s)\n", mcpURL, tokenSource)
		if u := n.ClientURL(); u != "" {
			fmt.Fprintf(c.Stderr, "crewlet serve: nodes without data join at %s (crewlet mcp --join %s, with stream.client.token)\n", u, u)
		}
	}
}

// shutdownWhenDone waits for ctx to end (or the server to stop on its
// own) and shuts the server down, closing the connections that outlast
// shutdownTimeout.
func shutdownWhenDone(ctx context.Context, hs *http.Server, served <-chan error, logger *slog.Logger) error {
	select {
	case <-ctx.Done():
		logger.Info("shutting down")
	case err := <-served:
		if !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("http: %w", err)
		}
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		logger.Warn("http shutdown incomplete; closing connections", engine.LogErr, err)
		_ = hs.Close()
	}
	return nil
}
