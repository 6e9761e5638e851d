package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/internal/token"
)

// RetentionCommand is `crewlet retention`: replication answers from a
// running node's /api/v1/retention, with the operator token.
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
	nodeURL := fs.String("node", "http://"+DefaultHTTPListen, "base `URL` of the running node's HTTP surfaces")
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
	rctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimRight(*nodeURL, "/")+"/api/v1/retention", nil)
	if err != nil {
		return usageErrorf("--node %q: %v", *nodeURL, err)
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("retention status: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("retention status: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		var ref struct {
			Refused string `json:"refused"`
			Message string `json:"message"`
		}
		if json.Unmarshal(body, &ref) == nil && ref.Refused != "" {
			return fmt.Errorf("retention status refused %s: %s", ref.Refused, ref.Message)
		}
		return fmt.Errorf("retention status: %s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	if *asJSON {
		_, err := c.Stdout.Write(body)
		return err
	}
	var a fleet.Answer
	if err := json.Unmarshal(body, &a); err != nil {
		return fmt.Errorf("retention status: the node answered something that is not a retention answer: %w", err)
	}
	return a.WriteTable(c.Stdout)
}
