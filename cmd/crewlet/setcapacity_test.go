//go:build integration

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	mcpgo "github.com/mark3labs/mcp-go/mcp"

	"github.com/crewlet/crewlet/engine/capacity"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/fleet"
)

// smallTracker is a tracker ceiling a few writes fill.
const smallTracker = 32 << 10

// setCapacity runs `crewlet retention set-capacity --json --log LOG --max-bytes SIZE`
// against s and returns its answer, or the command's failure text.
func setCapacity(t *testing.T, bin string, s *Serve, log, size string) (capacity.Change, string) {
	t.Helper()
	args := []string{"retention", "set-capacity", "--node", s.BaseURL, "--token-file", s.TokenFile, "--json", "--log", log, "--max-bytes", size}
	out, err := exec.Command(bin, args...).CombinedOutput()
	var ch capacity.Change
	if err != nil {
		return ch, string(out)
	}
	if err := json.Unmarshal(out, &ch); err != nil {
		t.Fatalf("crewlet %s printed %s: %v", strings.Join(args, " "), out, err)
	}
	return ch, ""
}

// fillTracker creates work items on c until one is refused log_full,
// and returns the refusal; each item carries a long description so a
// few dozen fill smallTracker.
func fillTracker(t *testing.T, c *client.Client, project string) map[string]any {
	t.Helper()
	for i := 0; i < 200; i++ {
		req := mcpgo.CallToolRequest{}
		req.Params.Name = "create_work_item"
		req.Params.Arguments = map[string]any{"project": project, "title": fmt.Sprintf("filler %d", i), "description": strings.Repeat("d", 1500)}
		ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		res, err := c.CallTool(ctx, req)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		if res.IsError {
			o := resultObject(res)
			if o["refused"] == "log_full" {
				return o
			}
			switch o["refused"] {
			case "broker_unreachable", "no_quorum", "behind":
				time.Sleep(200 * time.Millisecond)
				continue
			}
			t.Fatalf("filling the tracker log: %s", resultText(res))
		}
	}
	t.Fatalf("200 writes did not fill a %d-byte tracker log", smallTracker)
	return nil
}

// TestSetCapacity: one node whose tracker log is small enough to fill.
// Writes refuse log_full; `crewlet retention set-capacity` raises the
// log and the next write applies. A lower ceiling than the log holds is
// refused, one above it gives the rest back, a raise past the broker's
// limit is refused naming what sets it, and in maintenance the logs are
// still resized.
func TestSetCapacity(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(t.TempDir(), "crewlet.yaml")
	// The usage log takes its fixed 1 GiB and the vectors log is set to
	// 512 MiB, so the 4 GiB broker leaves the pages log room to be raised
	// to 2 GiB below.
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("stream: {store_max_bytes: 4GiB, tracker_log_max_bytes: %d, tracker_vectors_max_bytes: 512MiB}\n", smallTracker)), 0o600); err != nil {
		t.Fatal(err)
	}
	bin := BuildBinary(t)
	s := StartServe(t, dir, "--config", cfg)
	c := s.HTTPClient(t)
	Call(t, c, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	if full := fillTracker(t, c, "ENG"); !strings.Contains(full["message"].(string), "set-capacity") {
		t.Fatalf("log_full says nothing to do: %v", full)
	}

	ch, failed := setCapacity(t, bin, s, "tracker", "1MiB")
	if failed != "" || !ch.Changed || ch.Before != smallTracker || ch.MaxBytes != 1<<20 || ch.Ordinary != (1<<20)-(1<<20)/16 || ch.Held == 0 {
		t.Fatalf("raising the tracker log: %+v %s", ch, failed)
	}
	Call(t, c, "create_work_item", map[string]any{"project": "ENG", "title": "after the raise"})
	checkCapacityAudited(t, s, ch)
	var a fleet.Answer
	if err := json.Unmarshal([]byte(retentionStatus(t, bin, s, "--json")), &a); err != nil {
		t.Fatal(err)
	}
	for _, l := range a.Logs {
		if l.Stream == "CREWLET_TRACKER_LOG" && (l.MaxBytes != 1<<20 || l.Bytes < ch.Held || l.OrdinaryCeiling != ch.Ordinary) {
			t.Fatalf("retention status after the raise: %+v", l)
		}
	}
	if table := retentionStatus(t, bin, s); !strings.Contains(table, fmt.Sprintf("of %d bytes held (ordinary appends stop at %d)", 1<<20, ch.Ordinary)) || !strings.Contains(table, "LONGEST_TX") {
		t.Fatalf("retention status table after the raise:\n%s", table)
	}

	if _, failed := setCapacity(t, bin, s, "CREWLET_TRACKER_LOG", "1KiB"); !strings.Contains(failed, "refused invalid_argument") || !strings.Contains(failed, "cannot go below") {
		t.Fatalf("a ceiling below the bytes held: %s", failed)
	}
	giveBack := fmt.Sprint(ch.Held + 64<<10)
	if ch, failed := setCapacity(t, bin, s, "tracker", giveBack); failed != "" || fmt.Sprint(ch.MaxBytes) != giveBack {
		t.Fatalf("giving a reservation back: %+v %s", ch, failed)
	}
	_, failed = setCapacity(t, bin, s, "tracker", "100GiB")
	for _, says := range []string{"refused insufficient_storage", "CREWLET_TRACKER_LOG needed", "left to reserve", "stream.store_max_bytes, which you set", "raise stream.store_max_bytes", "nothing changed"} {
		if !strings.Contains(failed, says) {
			t.Errorf("a raise past the broker's limit does not say %q: %s", says, failed)
		}
	}
	if _, failed := setCapacity(t, bin, s, "lunch", "1GiB"); !strings.Contains(failed, "refused not_found") || !strings.Contains(failed, "pages (CREWLET_PAGES_LOG)") {
		t.Fatalf("an unknown log: %s", failed)
	}

	s.Stop(t)
	m := StartServe(t, dir, "--config", cfg, "--mode", "maintenance")
	if ch, failed := setCapacity(t, bin, m, "pages", "2GiB"); failed != "" || !ch.Changed || ch.MaxBytes != 2<<30 || ch.AuditOutcome != "refused maintenance" {
		t.Fatalf("set-capacity in maintenance: %+v %s, want the change made and its audit record refused maintenance", ch, failed)
	}
}

// checkCapacityAudited: the change's record is on the audit trail (a
// pending answer is waited for by reading the trail until it shows).
func checkCapacityAudited(t *testing.T, s *Serve, ch capacity.Change) {
	t.Helper()
	if ch.AuditOutcome != "applied" && ch.AuditOutcome != "pending" {
		t.Fatalf("the raise's audit record: %+v", ch)
	}
	want := fmt.Sprintf("set_capacity-CREWLET_TRACKER_LOG from %d to %d bytes", ch.Before, ch.MaxBytes)
	enginetest.CheckFor(t, callTimeout, 100*time.Millisecond, func() error {
		entries := readAudit(t, s)
		for _, e := range entries {
			if e.Kind == "statelog.capacity" && e.What == want && e.OpID == ch.AuditOpID && e.By == "operator" {
				return nil
			}
		}
		return fmt.Errorf("no audit entry %q by the operator under %s: %+v", want, ch.AuditOpID, entries)
	})
}

// TestSetCapacityFleet: on a three-node fleet the tracker log fills; one
// set-capacity on one node raises the replicated stream, and a write on
// another node applies; a raise past the brokers' limit is refused.
func TestSetCapacityFleet(t *testing.T) {
	f := startChildFleetWith(t, fmt.Sprintf("  tracker_log_max_bytes: %d\n", smallTracker))
	c1, c2 := f.serves[0].HTTPClient(t), f.serves[1].HTTPClient(t)
	callRetry(t, c1, "create_project", map[string]any{"key": "OPS", "name": "Operations"})
	fillTracker(t, c1, "OPS")
	ch, failed := setCapacity(t, f.bin, f.serves[2], "tracker", "1MiB")
	if failed != "" || !ch.Changed || ch.Before != smallTracker {
		t.Fatalf("raising the fleet's tracker log: %+v %s", ch, failed)
	}
	callRetry(t, c2, "create_work_item", map[string]any{"project": "OPS", "title": "after the raise, on another node"})
	if ch, failed := setCapacity(t, f.bin, f.serves[0], "tracker", "1MiB"); failed != "" || ch.Changed {
		t.Fatalf("the raise seen from another node: %+v %s", ch, failed)
	}
	// Past what a member's broker can reserve: refused, naming its limit.
	if _, failed = setCapacity(t, f.bin, f.serves[0], "tracker", "100TiB"); !strings.Contains(failed, "refused insufficient_storage") || !strings.Contains(failed, "left to reserve") {
		t.Fatalf("a raise past the brokers' limit: %s", failed)
	}
}
