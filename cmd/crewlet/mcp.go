package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/estate"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/turns"
	"github.com/crewlet/crewlet/internal/token"
	"github.com/crewlet/crewlet/mcp"
	"github.com/crewlet/crewlet/surfaces"
	"github.com/crewlet/crewlet/tools"
)

// MCPCommand is `crewlet mcp`: MCP over stdio for one assistant. stdout
// belongs to the protocol; every log line goes to stderr.
type MCPCommand struct {
	*Main
}

// mcpOptions are the resolved flags of one `crewlet mcp`.
type mcpOptions struct {
	Config  Config
	DataDir string
	NodeURL string // empty: embedded node on DataDir
	Token   string // with NodeURL: the operator token; with Join: stream.client.token
	Join    []string
	// Name is the name of a node without data (--join): the holder of
	// the seats whose turns run on it.
	Name string
	// Seat serves the seat surface instead of the operator's.
	Seat      bool
	LogFormat string
	// Filter narrows the toolset (--toolsets, --read-only, mcp.*).
	Filter tools.Filter
}

func (c *MCPCommand) parse(args []string) (mcpOptions, error) {
	fs := flag.NewFlagSet("crewlet mcp", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	configPath := fs.String("config", "", "YAML `file` of Tier A fields for the embedded node")
	dataDir := fs.String("data", node.DefaultDataDir, "data `dir`ectory of the embedded node")
	nodeURL := fs.String("node", "", "use the running node at `URL` (its operator MCP, e.g. http://127.0.0.1:7420/operator/mcp) instead of an embedded one")
	join := fs.String("join", "", "join the fleet as a node without data: the brokers' client `URL`s (nats://host:4222, comma-separated); calls go to a sound data node")
	tokenFile := fs.String("token-file", "", "`file` holding the operator token for --node (default: $"+token.EnvOperator+"), or stream.client.token for --join (default: $"+token.EnvStream+")")
	logFormat := fs.String("log-format", LogFormatAuto, "log `format` on stderr: auto, json or text")
	seat := fs.Bool("seat", false, "serve the seat surface (a seat's tools inside turns: start_turn, end_turn, ids derived from the unit of work) instead of the operator's; every call names its turn in _meta (crewlet/seat, crewlet/unit, crewlet/trigger_position)")
	name := fs.String("name", "", "with --join: this node's `name`, which holds the seats whose turns run here (default <host>-join)")
	filters := addFilterFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet mcp [flags]\n\nServe MCP over stdio: on an embedded node on --data, against a running node with --node URL, or as a node without data with --join URL.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return mcpOptions{}, err
	}
	o := mcpOptions{DataDir: *dataDir, LogFormat: *logFormat, Seat: *seat, Name: *name}
	o, err := c.parseMode(fs, o, *join, *nodeURL, *configPath, *tokenFile, *dataDir)
	if err != nil {
		return o, err
	}
	if o.Seat && o.NodeURL != "" {
		return o, usageErrorf("--seat serves a seat surface from this process: with --node, point the seat at the node's /seat/mcp instead")
	}
	if o.Name != "" && len(o.Join) == 0 {
		return o, usageErrorf("--name names a node without data: it goes with --join (a data node's name is node.name)")
	}
	// The flags override the file's mcp.*.
	filters.apply(&o.Config.MCP)
	if o.Filter, err = o.Config.MCP.Filter(); err != nil {
		return o, usageErrorf("--toolsets: %s", reason(err))
	}
	return o, nil
}

// parseMode resolves how this stdio server runs: embedded on a data
// directory, against a running node (--node) or joined (--join).
func (c *MCPCommand) parseMode(fs *flag.FlagSet, o mcpOptions, join, nodeURL, configPath, tokenFile, dataDir string) (mcpOptions, error) {
	if join != "" {
		return c.parseJoin(fs, o, join, nodeURL, configPath, tokenFile)
	}
	if nodeURL == "" {
		if tokenFile != "" {
			return o, usageErrorf("--token-file needs --node URL")
		}
		if configPath != "" {
			cfg, err := LoadConfig(configPath)
			if err != nil {
				return o, err
			}
			o.Config = cfg
		}
		if dataDir == "" {
			return o, usageErrorf("--data must name a directory")
		}
		return o, nil
	}
	if flagSet(fs, "data") || configPath != "" {
		return o, usageErrorf("--node URL uses a running node: --data and --config belong to an embedded one")
	}
	u, err := OperatorMCPURL(nodeURL)
	if err != nil {
		return o, err
	}
	o.NodeURL = u
	tok, found, err := token.Find(tokenFile, token.EnvOperator, "")
	if err != nil {
		return o, tokenFileError(err)
	}
	if !found {
		return o, usageErrorf("--node needs the operator token: --token-file FILE (the node's <data dir>/%s) or $%s", token.FileName, token.EnvOperator)
	}
	o.Token = tok
	return o, nil
}

// parseJoin resolves --join: the brokers' URLs and the client token.
func (c *MCPCommand) parseJoin(fs *flag.FlagSet, o mcpOptions, join, nodeURL, configPath, tokenFile string) (mcpOptions, error) {
	if nodeURL != "" || flagSet(fs, "data") || configPath != "" {
		return o, usageErrorf("--join makes this a node without data: --node, --data and --config belong to the other ways of running")
	}
	for _, u := range strings.Split(join, ",") {
		u = strings.TrimSpace(u)
		if err := node.CheckNATSURL("--join", u); err != nil {
			return o, usageErrorf("--join %q is not nats://host:port (the brokers' client port, stream.client.listen)", u)
		}
		o.Join = append(o.Join, u)
	}
	// An external NATS may want no token, or take credentials in the URL:
	// none found is no token.
	tok, _, err := token.Find(tokenFile, token.EnvStream, "")
	if err != nil {
		return o, tokenFileError(err)
	}
	o.Token = tok
	return o, nil
}

// tokenFileError words a token file that cannot be used after the flag
// that named it.
func tokenFileError(err error) error {
	var fe *token.FileError
	if !errors.As(err, &fe) {
		return err
	}
	if errors.Is(fe.Err, token.ErrEmpty) {
		return fmt.Errorf("--token-file %s is empty", fe.Path)
	}
	return fmt.Errorf("--token-file: %w", fe.Err)
}

// OperatorMCPURL accepts a node's base URL or its operator MCP URL and
// returns the latter.
func OperatorMCPURL(raw string) (string, error) {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", usageErrorf("--node %q is not an http(s) URL such as http://127.0.0.1:7420/operator/mcp", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = "/operator/mcp"
	}
	return u.String(), nil
}

// Run serves MCP on stdin/stdout until stdin closes or ctx ends.
func (c *MCPCommand) Run(ctx context.Context, args []string) error {
	o, err := c.parse(args)
	if err != nil {
		return err
	}
	logger, err := NewLogger(c.Stderr, o.LogFormat, slog.LevelInfo)
	if err != nil {
		return err
	}
	// Every line also goes to the client, if it asks (logging/setLevel).
	relay := mcp.NewLogRelay()
	logger = slog.New(relay.Handler(logger.Handler()))
	c.logsTo(logger, o.LogFormat)

	if len(o.Join) > 0 {
		return c.runJoined(ctx, o, logger)
	}
	if o.NodeURL != "" {
		srv, closeRemote, err := mcp.NewRemoteServer(ctx, o.NodeURL, o.Token, Version(), logger)
		if err != nil {
			return fmt.Errorf("--node %s: %w", o.NodeURL, err)
		}
		defer func() {
			if err := closeRemote(); err != nil {
				logger.Warn("remote close failed", engine.LogErr, err)
			}
		}()
		mcp.Narrow(srv, surfaces.Catalogue(c.registry()), o.Filter)
		logger.Info("serving MCP on stdio", "node_url", o.NodeURL, "toolsets", o.Filter.String())
		return mcp.ServeStdio(ctx, srv, c.Stdin, c.Stdout, logger)
	}

	reg := c.registry()
	cfg := o.Config.NodeConfig(o.DataDir)
	cfg.Domains = reg.Specs()
	cfg.Logger = logger
	cfg.Holder = "crewlet mcp (stdio)"
	n, err := node.Open(ctx, cfg)
	if err != nil {
		// A held data directory: the message names the holder and says to
		// use --node URL; main prints it and exits 1.
		return err
	}
	defer func() {
		if err := n.Close(); err != nil {
			logger.Error("node close failed", engine.LogErr, err)
		}
	}()
	srv := surfaces.Operator(n, reg, mcp.Options{Version: Version(), Logger: logger, Filter: o.Filter, Applied: n, Logs: relay})
	if o.Seat {
		srv = surfaces.SeatServer(n, reg, mcp.Options{Version: Version(), Logger: logger, Filter: o.Filter})
	}
	// A data node serves the estate to nodes without data whatever its
	// surface, every tool whatever its filter.
	if err := surfaces.ServeEstate(n, reg, mcp.Options{Version: Version(), Logger: logger}); err != nil {
		return err
	}
	logger.Info("serving MCP on stdio", "node", n.Name(), "data", o.DataDir, "toolsets", o.Filter.String())
	return mcp.ServeStdio(ctx, srv, c.Stdin, c.Stdout, logger)
}

// runJoined serves stdio as a node without the data role: it holds no
// estate, and every call goes over the brokers to a sound data node.
func (c *MCPCommand) runJoined(ctx context.Context, o mcpOptions, logger *slog.Logger) error {
	host, _ := os.Hostname()
	es, err := estate.Dial(estate.DialOptions{URLs: o.Join, Token: o.Token, Name: "crewlet mcp --join@" + host, Logger: logger})
	if err != nil {
		return fmt.Errorf("--join: %w; check the URL and the token (stream.client.token)", err)
	}
	defer es.Close()
	all := surfaces.Catalogue(c.registry())
	srv := mcp.NewJoinedServer(es, all, Version(), logger)
	mcp.Narrow(srv, all, o.Filter)
	if o.Seat {
		name := o.Name
		if name == "" {
			name = host + "-join"
		}
		srv = mcp.NewJoinedSeatServer(es, all, turns.NewFloors(), name, Version(), logger)
		mcp.NarrowSurface(srv, all, tools.Seat, o.Filter)
	}
	logger.Info("serving MCP on stdio", "join", strings.Join(o.Join, ","), "toolsets", o.Filter.String(), "seat", o.Seat)
	return mcp.ServeStdio(ctx, srv, c.Stdin, c.Stdout, logger)
}
