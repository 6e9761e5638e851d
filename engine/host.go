package engine

import (
	"context"
	"log/slog"
	"time"
)

// Host is what a domain's service learns of the data node that runs it
// once the node is up (Starter): the node's name, its data directory
// (for state of its own that is no replica's) and the company's clock.
type Host struct {
	// Node is node.name: what the node's records name as their writer.
	Node string
	// DataDir is the node's data directory.
	DataDir string
	// Company is the company's time zone (company.timezone), where its
	// days are cut.
	Company *time.Location
	Clock   Clock
	Logger  *slog.Logger
}

// Starter is a domain service with work of its own on the node running
// it: Start runs once the node is up, Stop before its replicas close.
type Starter interface {
	Start(ctx context.Context, h Host) error
	Stop()
}
