//go:build integration

package fleettest_test

import (
	"context"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/ledger"
)

// TestAdopterInheritsWatermark: Replication › What a retry is judged by,
// "The watermark travels with the ledger, so a node that adopts inherits
// its donor's." Both donors sweep their ledgers while n3 is down (at
// instants an hour apart, so each holds its own watermark), the trim
// passes n3, and n3 adopts a snapshot: its watermark is then exactly its
// donor's, and its ledger holds exactly the donor's rows.
func TestAdopterInheritsWatermark(t *testing.T) {
	r := startAdoptRig(t)
	r.write(t, 4)
	r.converged(t)
	ctx := context.Background()
	if _, lost, err := ledger.Watermark(ctx, r.c.Node(2).DB()); err != nil || lost {
		t.Fatalf("n3 holds a watermark before anything swept it (%v)", err)
	}
	r.reboot(t, func() {
		r.write(t, 3)
		// A pass thirty days and more on from every row's apply.
		for i, n := range []*node.Node{r.c.Node(0), r.c.Node(1)} {
			now := time.Now().Add(ledger.Retention + time.Duration(i)*time.Hour)
			if deleted, err := ledger.Sweep(ctx, n.DB(), now); err != nil || deleted == 0 {
				t.Fatalf("sweep on n%d: deleted %d (%v)", i+1, deleted, err)
			}
		}
		r.trim(t)
	})
	donor := r.adopted(t, 0)
	d, o := r.c.Node(1), r.c.Node(0)
	if donor == "n1" {
		d, o = o, d
	}
	want, lost, err := ledger.Watermark(ctx, d.DB())
	if err != nil || !lost {
		t.Fatalf("%s's watermark: lost %v (%v)", donor, lost, err)
	}
	got, lost, err := ledger.Watermark(ctx, r.c.Node(2).DB())
	if err != nil || !lost || !got.Equal(want) {
		t.Fatalf("n3's watermark %v (lost %v, %v), want its donor %s's %v", got, lost, err, donor, want)
	}
	other, _, err := ledger.Watermark(ctx, o.DB())
	if err != nil || other.Equal(want) {
		t.Fatalf("the donors' watermarks are alike (%v, %v): the test cannot tell whose n3 took", other, err)
	}
}
