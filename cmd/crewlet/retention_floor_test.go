package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/fleet"
)

// TestRetentionTableFloor: each log's line is followed by its trim floor
// and the term holding it (which node, which backup, the age), an
// unreadable floor says so, and a log never trimmed says that.
func TestRetentionTableFloor(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	a := fleet.Answer{Level: engine.Stale, Node: "n1", Logs: []fleet.LogFigures{
		{Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG", Generation: 1, FirstSeq: 41, LastSeq: 90, Measured: true,
			Floor: &fleet.Floor{Through: 40, Term: fleet.TermNode, Holder: "n3", By: "n1", At: at}},
		{Domain: engine.DomainPages, Stream: "CREWLET_PAGES_LOG", Generation: 1, LastSeq: 9, Measured: true, FloorUnread: "no quorum"},
		{Domain: "usage", Stream: "CREWLET_USAGE_LOG", Generation: 1, Measured: true},
	}}
	var b strings.Builder
	if err := writeRetentionTable(&b, a); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"trim floor: 40, held by node: n3 (trimmed by n1 at 2026-03-04T05:06:07Z)",
		"trim floor: unreadable (no quorum); nodes refuse floor_unknown", "trim floor: 0, nothing trimmed yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("retention table lacks %q:\n%s", want, out)
		}
	}
}

// TestTrimMinAgeConfig: retention.trim_min_age is a positive duration
// that reaches the node's trim; anything else names the field.
func TestTrimMinAgeConfig(t *testing.T) {
	c, err := ParseConfig(strings.NewReader("retention: {trim_min_age: 168h}\n"))
	if err != nil || c.NodeConfig("d").Trim.MinAge != 168*time.Hour {
		t.Fatalf("trim_min_age: %+v %v", c.Retention, err)
	}
	_, err = ParseConfig(strings.NewReader("retention: {trim_min_age: -1h}\n"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "retention.trim_min_age" {
		t.Fatalf("a negative age: %v", err)
	}
}
