package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/turns"
	"github.com/crewlet/crewlet/internal/token"
)

func TestRetentionTable(t *testing.T) {
	secs := 1.5
	since := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := fleet.Answer{Level: engine.Stale, Node: "n1", Logs: []fleet.LogFigures{{Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG", Generation: 2, LastSeq: 40, Measured: true}},
		Nodes: []fleet.NodeFigures{
			{Node: "n1", Domains: []fleet.DomainFigures{{Position: fleet.Position{Domain: engine.DomainTracker, Generation: 2, Seq: 40, AppliedThrough: 38}, Lag: &engine.Lag{Seq: 0, Seconds: &secs},
				Reader: &fleet.ReaderLead{Leader: "n1", Since: &since}}}},
			{Node: "n2", Domains: []fleet.DomainFigures{{Position: fleet.Position{Domain: engine.DomainTracker, Generation: 1, Seq: 90, AppliedThrough: 90}, LeftGen: 1,
				Reader: &fleet.ReaderLead{}}}},
			{Node: "n3", Domains: []fleet.DomainFigures{{Position: fleet.Position{Domain: engine.DomainTracker, Generation: 2}}}},
		},
		Alarms: []statelog.Alarm{{Name: statelog.AlarmDeferral, Domain: engine.DomainTracker, Message: "1 record(s) this build cannot decode"}},
		Seats: &turns.SeatsAnswer{Seats: []turns.Placement{{Seat: "triage-bot", Node: "n2", ClaimedAt: since, From: "n1", Turns: 3, LastTurnAt: since}},
			Nodes: []turns.NodeClaims{{Node: "n1", Claims: true}, {Node: "n2", Why: "tracker: 7 records behind", Holds: 1}}}}
	var b strings.Builder
	if err := writeRetentionTable(&b, a); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"level: stale", "NODE", "GEN", "APPLIED_THROUGH", "LAG", "n1", "40", "38", "0 (1.5s)", "left gen 1", "not yet", "ALARM deferral (tracker): 1 record(s)",
		"READER_LED_BY", "n1 since 2026-03-04T05:06:07Z", "electing",
		"node n1: holds 0 seat(s), claims new seats", "node n2: holds 1 seat(s), claims no new seats (not level: tracker: 7 records behind)",
		"SEAT", "HELD_BY", "triage-bot", "2026-03-04T05:06:07Z"} {
		if !strings.Contains(out, want) {
			t.Errorf("retention table lacks %q:\n%s", want, out)
		}
	}
}

// TestRetentionStatusCommand: `crewlet retention status` against a node
// that answers as /api/v1/retention does: the table, --json byte for byte
// what the node sent, a refusal in words, and no token a usage mistake.
func TestRetentionStatusCommand(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 890123456, time.UTC)
	secs := 0.5
	answer := fleet.Answer{Level: engine.Stale, AskedAt: at, Node: "n1",
		Logs: []fleet.LogFigures{{Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG", Generation: 1, FirstSeq: 1, LastSeq: 9, CreatedAt: at, Measured: true}},
		Nodes: []fleet.NodeFigures{{Node: "n1", Domains: []fleet.DomainFigures{{Position: fleet.Position{Node: "n1", Domain: engine.DomainTracker,
			Stream: "CREWLET_TRACKER_LOG", Generation: 1, Seq: 9, AppliedThrough: 9, StreamCreatedAt: at, CheckpointStoredAt: at, StartedAt: at, BeatAt: at},
			Lag: &engine.Lag{Seq: 0, Seconds: &secs}, Reader: &fleet.ReaderLead{Leader: "n1", Since: &at}}}}}}
	var sent bytes.Buffer
	if err := json.NewEncoder(&sent).Encode(answer); err != nil {
		t.Fatal(err)
	}
	const tok = "retention-command-token"
	refuse := false
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/v1/retention" || r.Header.Get("Authorization") != "Bearer "+tok {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"refused":"unauthorized","message":"wrong token or path"}`))
			return
		}
		if refuse {
			ref := engine.Refuse(engine.CodeBrokerUnreachable, "the broker does not answer.")
			w.WriteHeader(engine.HTTPStatus(ref.Code))
			_ = json.NewEncoder(w).Encode(ref.Object())
			return
		}
		_, _ = w.Write(sent.Bytes())
	}))
	defer ts.Close()
	tokFile := filepath.Join(t.TempDir(), "tok")
	if err := os.WriteFile(tokFile, []byte(tok+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		m := &Main{Stdout: &out, Stderr: os.Stderr}
		err := m.Run(context.Background(), append([]string{"retention", "status", "--node", ts.URL + "/", "--token-file", tokFile}, args...))
		return out.String(), err
	}

	out, err := run()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "level: stale (asked n1 at 2026-03-04T05:06:07Z)") || !strings.Contains(out, "0 (0.5s)") {
		t.Errorf("table:\n%s", out)
	}
	out, err = run("--json")
	if err != nil {
		t.Fatal(err)
	}
	if out != sent.String() {
		t.Errorf("--json printed\n%s\nthe node sent\n%s", out, sent.String())
	}

	refuse = true
	if _, err := run(); err == nil || err.Error() != "retention status refused broker_unreachable: the broker does not answer." {
		t.Errorf("refused: %v", err)
	}

	t.Setenv(token.EnvOperator, "")
	var ue *usageError
	m := &Main{Stdout: &bytes.Buffer{}, Stderr: os.Stderr}
	if err := m.Run(context.Background(), []string{"retention", "status", "--node", ts.URL}); !errors.As(err, &ue) {
		t.Errorf("without a token: %v, want a usage error", err)
	}
	if err := m.Run(context.Background(), []string{"retention", "status", "--node", "127.0.0.1:7420", "--token-file", tokFile}); !errors.As(err, &ue) || !strings.Contains(err.Error(), `--node "127.0.0.1:7420"`) {
		t.Errorf("a base URL without a scheme: %v, want a usage error naming it", err)
	}
}

// TestRetentionTableCapacity: the table names each log's ceiling, the
// bytes it holds and its ordinary ceiling, each node's longest apply
// transaction and batch, and an applier's current error.
func TestRetentionTableCapacity(t *testing.T) {
	a := fleet.Answer{Level: engine.Stale, Node: "n1",
		Logs: []fleet.LogFigures{{Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG", Generation: 1, LastSeq: 9, Measured: true, MaxBytes: 1 << 20, Bytes: 4096, OrdinaryCeiling: 983040}},
		Nodes: []fleet.NodeFigures{{Node: "n1", Domains: []fleet.DomainFigures{{Position: fleet.Position{Domain: engine.DomainTracker, Generation: 1, Seq: 9, AppliedThrough: 9,
			Apply: &statelog.ApplyStats{LongestTx: 1500 * time.Millisecond, LongestTxRecords: 3, LongestTxRows: 4000, LongestBatch: 7, LongestBatchRows: 4100}, ApplyErr: "the disk said no"}}}}}}
	var b strings.Builder
	if err := writeRetentionTable(&b, a); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"4096 of 1048576 bytes held (ordinary appends stop at 983040)", "LONGEST_TX", "LONGEST_BATCH", "1.5s (3 records, 4000 rows)", "7 records, 4100 rows", "n1 tracker applier error: the disk said no"} {
		if !strings.Contains(out, want) {
			t.Errorf("retention table lacks %q:\n%s", want, out)
		}
	}
}
