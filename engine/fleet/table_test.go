package fleet

import (
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

func TestWriteTable(t *testing.T) {
	secs := 1.5
	a := Answer{Level: engine.Stale, Node: "n1", Logs: []LogFigures{{Domain: engine.DomainTracker, Stream: "CREWLET_TRACKER_LOG", Generation: 2, LastSeq: 40, Measured: true}},
		Nodes: []NodeFigures{
			{Node: "n1", Domains: []DomainFigures{{Position: Position{Domain: engine.DomainTracker, Generation: 2, Seq: 40, AppliedThrough: 38}, Lag: &engine.Lag{Seq: 0, Seconds: &secs}}}},
			{Node: "n2", Domains: []DomainFigures{{Position: Position{Domain: engine.DomainTracker, Generation: 1, Seq: 90, AppliedThrough: 90}, LeftGen: 1}}},
			{Node: "n3", Domains: []DomainFigures{{Position: Position{Domain: engine.DomainTracker, Generation: 2}}}},
		}}
	var b strings.Builder
	if err := a.WriteTable(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"level: stale", "NODE", "GEN", "APPLIED_THROUGH", "LAG", "n1", "40", "38", "0 (1.5s)", "left gen 1", "not yet"} {
		if !strings.Contains(out, want) {
			t.Errorf("retention table lacks %q:\n%s", want, out)
		}
	}
}
