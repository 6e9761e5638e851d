package metrics_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/crewlet/crewlet/engine/metrics"
)

// TestCountRefusals: a refusal answered on a wrapped surface is counted by
// its code under the surface, its body reaching the client untouched; an
// answer that is not a refusal is not counted, and a streaming answer
// still flushes through the wrapper.
func TestCountRefusals(t *testing.T) {
	reg := metrics.New()
	mux := http.NewServeMux()
	mux.HandleFunc("/refuse", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"refused":"not_found","message":"no such thing"}`)
	})
	mux.HandleFunc("/plain", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "gone", http.StatusGone)
	})
	mux.HandleFunc("/stream", func(w http.ResponseWriter, _ *http.Request) {
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Errorf("the wrapper hides the flusher: %v", err)
		}
		io.WriteString(w, "data: ok\n\n")
	})
	ts := httptest.NewServer(reg.CountRefusals(func(r *http.Request) string { return "rest" }, mux))
	defer ts.Close()
	for _, path := range []string{"/refuse", "/refuse", "/plain", "/stream"} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/refuse" && !strings.Contains(string(body), "no such thing") {
			t.Fatalf("the refusal's body did not pass through: %q", body)
		}
	}
	const want = `
# HELP crewlet_refusals Refusals answered, by code and surface.
# TYPE crewlet_refusals counter
crewlet_refusals{code="not_found",surface="rest"} 2
`
	if err := testutil.GatherAndCompare(reg.Gatherer(), strings.NewReader(want), "crewlet_refusals"); err != nil {
		t.Fatal(err)
	}
}

// TestRegistriesApart: two nodes in one process have registries of their
// own: a count on one is not seen on the other, which exposes its own
// series at zero.
func TestRegistriesApart(t *testing.T) {
	a, b := metrics.New(), metrics.New()
	a.Domain("tracker").TxAborted()
	b.Domain("tracker")
	const head = `
# HELP crewlet_statelog_apply_tx_aborts Apply transactions rolled back (crewlet.statelog.apply.tx.aborts): zero on a healthy node; non-zero is the retry budget being spent.
# TYPE crewlet_statelog_apply_tx_aborts counter
`
	for _, c := range []struct {
		r    *metrics.Registry
		want string
	}{{a, "1"}, {b, "0"}} {
		if err := testutil.GatherAndCompare(c.r.Gatherer(), strings.NewReader(head+`crewlet_statelog_apply_tx_aborts{domain="tracker"} `+c.want+"\n"), "crewlet_statelog_apply_tx_aborts"); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWritePhasesReadBack: a domain's phases are exposed from the start,
// at zero (a reader of /metrics finds them before the first write); what
// it observes in each phase is read back as rounds and time, apart from
// another domain's; two readings give what happened between them, and
// its means; nodes' totals add.
func TestWritePhasesReadBack(t *testing.T) {
	reg := metrics.New()
	d := reg.Domain("tracker")
	fams, err := reg.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exposed := map[string]bool{}
	for _, f := range fams {
		if f.GetName() != metrics.WritePhaseMetric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "phase" && m.GetHistogram().GetSampleCount() == 0 {
					exposed[l.GetValue()] = true
				}
			}
		}
	}
	if len(exposed) != len(metrics.Phases) {
		t.Fatalf("a new domain exposes the phases %v at zero, want %v", exposed, metrics.Phases)
	}
	d.WritePhase(metrics.PhaseDecide, 2*time.Millisecond)
	reg.Domain("kb").WritePhase(metrics.PhaseDecide, time.Second)
	before := reg.WritePhases("tracker")
	d.WritePhase(metrics.PhaseDecide, 4*time.Millisecond)
	d.WritePhase(metrics.PhaseDecide, 6*time.Millisecond)
	d.WritePhase(metrics.PhaseSettle, 9*time.Millisecond)
	after := reg.WritePhases("tracker")
	if got := after[metrics.PhaseDecide]; got.Rounds != 3 || got.Took != 12*time.Millisecond {
		t.Fatalf("decide read back as %+v, want 3 rounds in 12ms", got)
	}
	means := after.Since(before).Means()
	want := map[string]time.Duration{metrics.PhaseDecide: 5 * time.Millisecond, metrics.PhaseSettle: 9 * time.Millisecond}
	if len(means) != len(want) || means[metrics.PhaseDecide] != want[metrics.PhaseDecide] || means[metrics.PhaseSettle] != want[metrics.PhaseSettle] {
		t.Fatalf("means between the readings %v, want %v (append observed nothing)", means, want)
	}
	if got := reg.WritePhases("kb")[metrics.PhaseDecide]; got.Rounds != 1 || got.Took != time.Second {
		t.Fatalf("the other domain's decide read back as %+v, want its own one round of 1s", got)
	}
	sum := metrics.PhaseTotals{}
	sum.Add(after)
	sum.Add(after)
	if got := sum[metrics.PhaseSettle]; got.Rounds != 2 || got.Took != 18*time.Millisecond {
		t.Fatalf("two nodes' settles add to %+v", got)
	}
}

// TestLabelledCountersStartAtZero: the seeds' labelled counters are on
// /metrics at zero before their first event, under every label value the
// node knows (each refusal code and each known gate as a publish refusal's
// reason, each known gate under records_gated), so an alert on the first
// increment finds its series.
func TestLabelledCountersStartAtZero(t *testing.T) {
	reg := metrics.New()
	d := reg.Domain("tracker")
	d.KnowGate("deleted")
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body := rec.Body.String()
	for _, series := range []string{
		`crewlet_statelog_publish_refusals{domain="tracker",reason="stale"} 0`,
		`crewlet_statelog_publish_refusals{domain="tracker",reason="log_full"} 0`,
		`crewlet_statelog_publish_refusals{domain="tracker",reason="evicted"} 0`,
		`crewlet_statelog_publish_refusals{domain="tracker",reason="deleted"} 0`,
		`crewlet_statelog_records_gated{domain="tracker",gate="deleted"} 0`,
		`crewlet_statelog_apply_retries{domain="tracker"} 0`,
		`crewlet_statelog_apply_tx_aborts{domain="tracker"} 0`,
	} {
		if !strings.Contains(body, series) {
			t.Errorf("/metrics lacks %s before any event", series)
		}
	}
	d.PublishRefused("stale")
	rec = httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if want := `crewlet_statelog_publish_refusals{domain="tracker",reason="stale"} 1`; !strings.Contains(rec.Body.String(), want) {
		t.Errorf("a stale refusal is not counted: /metrics lacks %s", want)
	}
}
