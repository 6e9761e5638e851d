package fleettest_test

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/trim"
)

// backups is the backup gate's source for the trim tests: what a backup
// reached, moved when one lands.
type backups struct{ reach atomic.Uint64 }

func newBackups() *backups { return &backups{} }

// of is the source node i's trim reads.
func (b *backups) of(int) trim.Backups { return b }

func (b *backups) Reached(context.Context) (map[string]uint64, error) {
	v := b.reach.Load()
	return map[string]uint64{string(engine.DomainTracker): v, string(engine.DomainPages): v}, nil
}

// backUp takes a backup covering seq and returns what it reached.
func (b *backups) backUp(_ *testing.T, _ context.Context, _ *fleettest.Cluster, seq uint64) uint64 {
	return seq
}

// land makes a backup that reached seq the one the gate reads.
func (b *backups) land(seq uint64) { b.reach.Store(seq) }
