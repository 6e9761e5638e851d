//go:build integration

package mcp

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleettest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
)

// TestSeatReadAsksTheNextHolder: three data nodes serve the estate (a
// seat's call sent on answered by their seat surface). The first node's
// tracker applier fails (inside its retry budget: behind, not out of
// service), so a seat read on its /seat/mcp that must see a record it
// cannot apply is answered behind there, and the seat surface asks the
// next holder, which answers with the row, named in _meta. The seat's
// turn, started on the first node before it fell behind, keeps its seat
// there.
func TestSeatReadAsksTheNextHolder(t *testing.T) {
	if testing.Short() {
		t.Skip("boots a three-node cluster")
	}
	var failing atomic.Bool
	logger := testLogger(t)
	c := fleettest.StartCluster(t, fleettest.Options{
		Configure: func(i int, cfg *node.Config) {
			cfg.Logger = logger.With("node", cfg.Name)
			cfg.ApplyRetryBudget = time.Minute
			cfg.ReadBudget = 500 * time.Millisecond
			cfg.Hooks.BeforeApplyCommit = func(d engine.Domain, _ uint64) error {
				if i == 0 && d == engine.DomainTracker && failing.Load() {
					return errors.New("injected: the disk refuses the apply")
				}
				return nil
			}
		},
		Opened: func(i int, n *node.Node) error {
			cat := catalogueOf(n.Tracker(), n.Pages(), n.NodeGates(), n)
			seat := NewSeat(n.Units(), Options{Version: "test", Logger: logger, Floors: n.SeatFloors(), Node: n.Name()}, cat)
			return n.ServeEstate(EstateHandlers(NewServer("test", logger, cat), seat))
		},
	})
	first := c.Node(0)
	s := NewSeat(first.Units(), Options{Version: "test", Logger: logger, Floors: first.SeatFloors(), Node: first.Name(), NextHolder: first.NextHolder()},
		catalogueOf(first.Tracker(), first.Pages(), first))
	mux := http.NewServeMux()
	mux.Handle("/seat/mcp", httpedge.NewGuard(httpedge.GuardOptions{Token: testToken, Logger: logger}).Operator(SeatHandler(s, logger)))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	seat := seatOf(t, ts.URL+"/seat/mcp", "seat-a", "unit-1")
	must(t, seat, "start_turn", map[string]any{})
	must(t, seat, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})

	failing.Store(true)
	other := inProcess(t, NewServer("test", logger, catalogueOf(c.Node(1).Tracker())))
	if m := must(t, other, "create_work_item", map[string]any{"project": "ENG", "title": "only the others apply it"}); m["outcome"] != "applied" {
		t.Fatalf("the write on another node: %v", m)
	}
	res := callTool(t, seat, "get_work_item", map[string]any{"key": "ENG-1"})
	m := object(t, res)
	if res.IsError {
		t.Fatalf("a seat read on a node behind: %v", m)
	}
	var by string
	if res.Meta != nil {
		by, _ = res.Meta.GetMetaField(MetaDataNode).(string)
	}
	if by == "" || by == first.Name() || field(m, "item", "title") != "only the others apply it" {
		t.Fatalf("answered by %q: %v", by, m)
	}
	// The turn's seat stays on the node behind; a new seat is not claimed.
	if st := must(t, seatOf(t, ts.URL+"/seat/mcp", "seat-a", "unit-2"), "start_turn", map[string]any{}); field(st, "turn", "placement", "node") != first.Name() {
		t.Fatalf("the held seat: %v", st)
	}
	refused(t, seatOf(t, ts.URL+"/seat/mcp", "seat-b", "unit-3"), "start_turn", map[string]any{}, engine.CodeBehind)
	failing.Store(false)
}
