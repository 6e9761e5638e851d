//go:build integration

package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	mcpgo "github.com/mark3labs/mcp-go/mcp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// authGet GETs path on s with the operator token (none when tok is
// empty), answering the status and the body.
func authGet(t *testing.T, s *Serve, path, tok string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.BaseURL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// scrape reads /metrics and parses it with the Prometheus text parser.
func scrape(t *testing.T, s *Serve) map[string]*dto.MetricFamily {
	t.Helper()
	code, body := authGet(t, s, "/metrics", s.Token)
	if code != http.StatusOK {
		t.Fatalf("/metrics answered %d: %s", code, body)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("/metrics does not parse as the Prometheus text format: %v\n%s", err, body)
	}
	return fams
}

// sample is the value of family name's series whose labels include
// want; ok is false when there is none.
func sample(fams map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

// TestServeMetrics scrapes a real `crewlet serve`: /metrics wants the
// token, parses as the Prometheus text format, carries the seeds'
// counters (at zero on a healthy node) and the operator's gauges and
// histograms under their labels, and its counters move after real writes
// over MCP and real refusals on the MCP and REST surfaces.
func TestServeMetrics(t *testing.T) {
	s := StartServe(t, filepath.Join(t.TempDir(), "data"))
	if code, _ := authGet(t, s, "/metrics", ""); code != http.StatusUnauthorized {
		t.Fatalf("/metrics without the token answered %d, want 401", code)
	}
	before := scrape(t, s)
	checkHealthySeries(t, before)
	tracker := map[string]string{"domain": "tracker"}

	c := s.HTTPClient(t)
	exerciseTracker(t, c, "MET")
	refuseOverMCP(t, c)
	if code, _ := authGet(t, s, "/api/v1/work-items/NOPE-1", s.Token); code != http.StatusNotFound {
		t.Fatalf("a read of an item that does not exist answered %d, want 404", code)
	}
	seat := streamableClient(t, s.BaseURL+"/seat/mcp", seatHeaders(s, "met"))
	Call(t, seat, "list_projects", map[string]any{})
	req, _ := http.NewRequest(http.MethodPost, s.BaseURL+"/api/v1/nodes/not%20a%20node/evict", nil)
	req.Header.Set("Authorization", "Bearer "+s.Token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("evicting a malformed node name: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}
	after := scrape(t, s)

	moved := func(name string, labels map[string]string, by float64) {
		t.Helper()
		b, _ := sample(before, name, labels)
		a, ok := sample(after, name, labels)
		if !ok || a-b < by {
			t.Errorf("%s%v moved from %v to %v (present %v), want at least +%v", name, labels, b, a, ok, by)
		}
	}
	moved("crewlet_statelog_write_outcomes", map[string]string{"domain": "tracker", "outcome": "applied"}, 2)
	moved("crewlet_tool_calls", map[string]string{"tool": "create_work_item", "surface": "operator"}, 1)
	moved("crewlet_tool_call_seconds", map[string]string{"tool": "get_work_item", "surface": "operator"}, 1)
	moved("crewlet_refusals", map[string]string{"code": "not_found", "surface": "operator"}, 1)
	moved("crewlet_refusals", map[string]string{"code": "not_found", "surface": "rest"}, 1)
	moved("crewlet_refusals", map[string]string{"code": "invalid_argument", "surface": "operator_routes"}, 1)
	moved("crewlet_tool_calls", map[string]string{"tool": "list_projects", "surface": "seat"}, 1)
	// At one replica a linearizable read asks the log where it ends
	// rather than appending a barrier (statelog.EndReader).
	moved("crewlet_statelog_end_reads", tracker, 1)
	for _, phase := range []string{"decide", "append", "settle"} {
		moved("crewlet_statelog_write_phase_seconds", map[string]string{"domain": "tracker", "phase": phase}, 2)
	}
	moved("crewlet_statelog_apply_tx_seconds", tracker, 1)
	moved("crewlet_statelog_apply_batch_seconds", tracker, 1)
	moved("crewlet_statelog_seq", tracker, 2)
	moved("crewlet_ledger_rows", tracker, 2)
	moved("crewlet_statelog_log_bytes", tracker, 1)
	if v, _ := sample(after, "crewlet_statelog_longest_tx_records", tracker); v < 1 {
		t.Errorf("the longest transaction holds %v records, want at least 1", v)
	}
	if v, _ := sample(after, "crewlet_statelog_apply_tx_aborts", tracker); v != 0 {
		t.Errorf("tx aborts = %v after ordinary writes, want 0", v)
	}
}

// refuseOverMCP makes a real refusal on the operator MCP: a read of an
// item that does not exist.
func refuseOverMCP(t *testing.T, c interface {
	CallTool(context.Context, mcpgo.CallToolRequest) (*mcpgo.CallToolResult, error)
}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), callTimeout)
	defer cancel()
	req := mcpgo.CallToolRequest{}
	req.Params.Name = "get_work_item"
	req.Params.Arguments = map[string]any{"key": "MET-999"}
	res, err := c.CallTool(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if !res.IsError || !strings.Contains(resultText(res), `"not_found"`) {
		t.Fatalf("get_work_item of an item that does not exist: %s, want refused not_found", resultText(res))
	}
}

// checkHealthySeries: a fresh node exposes the seeds' counters at zero,
// each gauge for both domains, and every alarm down.
func checkHealthySeries(t *testing.T, before map[string]*dto.MetricFamily) {
	t.Helper()
	tracker := map[string]string{"domain": "tracker"}
	for _, name := range []string{"crewlet_statelog_apply_tx_aborts", "crewlet_statelog_apply_retries"} {
		if v, ok := sample(before, name, tracker); !ok || v != 0 {
			t.Errorf("%s{domain=tracker} = %v (present %v), want 0 on a healthy node", name, v, ok)
		}
	}
	for _, gate := range []string{"evicted", "deleted"} {
		if v, ok := sample(before, "crewlet_statelog_records_gated", map[string]string{"domain": "tracker", "gate": gate}); !ok || v != 0 {
			t.Errorf("records_gated{gate=%s} = %v (present %v), want 0", gate, v, ok)
		}
	}
	for _, name := range []string{"crewlet_statelog_seq", "crewlet_statelog_applied_through", "crewlet_statelog_lag_records",
		"crewlet_statelog_log_bytes", "crewlet_statelog_log_ceiling_bytes", "crewlet_statelog_longest_tx_seconds",
		"crewlet_statelog_longest_batch_records", "crewlet_ledger_rows", "crewlet_statelog_trim_floor", "crewlet_statelog_trim_floor_unread"} {
		for _, d := range []string{"tracker", "pages"} {
			if _, ok := sample(before, name, map[string]string{"domain": d}); !ok {
				t.Errorf("%s{domain=%s} is missing", name, d)
			}
		}
	}
	if _, ok := sample(before, "crewlet_ledger_watermark_seconds", nil); !ok {
		t.Error("crewlet_ledger_watermark_seconds is missing")
	}
	if v, ok := sample(before, "crewlet_statelog_log_ceiling_bytes", tracker); !ok || v <= 0 {
		t.Errorf("the tracker log's ceiling = %v, want the stream's byte ceiling", v)
	}
	for _, a := range []string{"records_gated", "deferral", "log_full_approaching", "applier_faulted"} {
		if v, ok := sample(before, "crewlet_alarm", map[string]string{"name": a, "domain": "tracker"}); !ok || v != 0 {
			t.Errorf("crewlet_alarm{name=%s} = %v (present %v), want 0 on a healthy node", a, v, ok)
		}
	}
}
