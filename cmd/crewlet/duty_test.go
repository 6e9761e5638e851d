//go:build integration

package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// dutyHolder reads who holds duty from `crewlet retention status --json`
// on s ("" while vacant or unreadable).
func dutyHolder(t *testing.T, f *childFleet, s *Serve, duty string) string {
	t.Helper()
	var a struct {
		Duties []struct {
			Duty string `json:"duty"`
			Node string `json:"node"`
		} `json:"duties"`
	}
	if err := json.Unmarshal([]byte(retentionStatus(t, f.bin, s, "--json")), &a); err != nil {
		return ""
	}
	for _, d := range a.Duties {
		if d.Duty == duty {
			return d.Node
		}
	}
	return ""
}

// waitHolder waits until s names a holder of duty other than not, and
// answers it and how long that took.
func waitHolder(t *testing.T, f *childFleet, s *Serve, duty, not string, within time.Duration) (string, time.Duration) {
	t.Helper()
	t0 := time.Now()
	for {
		if h := dutyHolder(t, f, s, duty); h != "" && h != not {
			return h, time.Since(t0)
		}
		if time.Since(t0) > within {
			t.Fatalf("no node other than %q holds the %s duty after %v:\n%s", not, duty, within, retentionStatus(t, f.bin, s))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func nodeIndex(t *testing.T, name string) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(name, "n%d", &i); err != nil || i < 1 || i > 3 {
		t.Fatalf("holder %q is no node of the fleet", name)
	}
	return i - 1
}

// TestDutyMovesOnKillAndStop: in a fleet of three `crewlet serve`
// children exactly one holds the tracker duty, named alike by every
// node's `crewlet retention status` (text and --json) and by its own
// /metrics; SIGKILL of the holder moves the duty to another node within
// the lease's TTL and a renewal (the killed lease expires), and a clean
// stop of the next holder moves it at once (its lease is handed over).
func TestDutyMovesOnKillAndStop(t *testing.T) {
	f := startChildFleet(t)
	first, _ := waitHolder(t, f, f.serves[0], "tracker", "", 60*time.Second)
	for _, s := range f.serves {
		if got := dutyHolder(t, f, s, "tracker"); got != first {
			t.Fatalf("%s names %q as the holder, n1 names %q", s.BaseURL, got, first)
		}
	}
	h := nodeIndex(t, first)
	if txt := retentionStatus(t, f.bin, f.serves[(h+1)%3]); !strings.Contains(txt, "duty tracker: held by "+first+" since") {
		t.Fatalf("the text answer does not name the holder %s:\n%s", first, txt)
	}
	for i, s := range f.serves {
		code, body := authGet(t, s, "/metrics", s.Token)
		held := fmt.Sprintf(`crewlet_duty_held{duty="tracker"} %d`, map[bool]int{true: 1, false: 0}[i == h])
		if code != 200 || !strings.Contains(body, held) || !strings.Contains(body, `crewlet_duty_holder{duty="tracker",holder="`+first+`"} 1`) {
			t.Fatalf("n%d's /metrics (%d) lacks %s", i+1, code, held)
		}
	}
	f.serves[h].Kill(t)
	other := f.serves[(h+1)%3]
	second, took := waitHolder(t, f, other, "tracker", first, 60*time.Second)
	t.Logf("SIGKILL of the holder %s: %s holds the tracker duty %v later", first, second, took.Round(time.Millisecond))
	if took > 20*time.Second {
		t.Errorf("the duty moved %v after its holder was killed; the lease's TTL is 10 s", took)
	}
	f.restart(t, h)
	k := nodeIndex(t, second)
	f.serves[k].Stop(t)
	third, took := waitHolder(t, f, f.serves[3-h-k], "tracker", second, 30*time.Second)
	t.Logf("clean stop of the holder %s: %s holds the tracker duty %v later", second, third, took.Round(time.Millisecond))
	if took > 8*time.Second {
		t.Errorf("a clean stop moved the duty only %v later; a handed-over lease is taken at once", took)
	}
}
