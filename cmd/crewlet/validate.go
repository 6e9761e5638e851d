package main

import (
	"context"
	"flag"
	"fmt"
)

// ValidateCommand is `crewlet validate`: checks a config file without
// starting anything, and says what only a running node can check.
type ValidateCommand struct {
	*Main
}

// Run validates the file named by --config.
func (c *ValidateCommand) Run(_ context.Context, args []string) error {
	fs := flag.NewFlagSet("crewlet validate", flag.ContinueOnError)
	fs.SetOutput(c.Stderr)
	configPath := fs.String("config", "", "YAML `file` of Tier A fields to check")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: crewlet validate --config FILE\n\nCheck a config file and say what it cannot check.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *configPath == "" {
		return usageErrorf("validate needs --config FILE")
	}
	cfg, err := LoadConfig(*configPath)
	if err != nil {
		return err
	}
	fmt.Fprintf(c.Stdout, "%s: ok\n", *configPath)
	for _, s := range cannotCheck(cfg) {
		fmt.Fprintf(c.Stdout, "not checked: %s\n", s)
	}
	return nil
}

// cannotCheck lists what a file alone cannot tell, each block's by the
// package whose rules they are.
func cannotCheck(cfg Config) []string {
	return append(cfg.NodeConfig("").Unchecked(), cfg.HTTPConfig().Unchecked()...)
}
