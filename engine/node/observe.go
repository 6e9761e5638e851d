package node

import (
	"context"
	"net/http"

	"github.com/crewlet/crewlet/engine/audit"
	"github.com/crewlet/crewlet/engine/metrics"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/ledger"
)

// Metrics is the node's own metrics registry: the surfaces count their
// calls and refusals on it, and /metrics serves it.
func (n *Node) Metrics() *metrics.Registry { return n.metrics }

// MetricsHandler serves the node's metrics in the Prometheus text format.
func (n *Node) MetricsHandler() http.Handler { return n.metrics.Handler() }

// Alarms is every alarm up on this node, domain by domain.
func (n *Node) Alarms(ctx context.Context) []statelog.Alarm {
	out := []statelog.Alarm{}
	for _, r := range n.replicas() {
		out = append(out, r.Alarms(ctx)...)
	}
	return out
}

// metricsState reads what a scrape publishes from the replicas: each
// domain's positions and lag (one broker call a domain, as the
// replication answer makes), its fill, its ledger rows and its alarms.
func (n *Node) metricsState(ctx context.Context) metrics.NodeState {
	var st metrics.NodeState
	var domains []string
	for _, r := range n.replicas() {
		domains = append(domains, string(r.Domain()))
	}
	ledgerRows := ledger.RowsByDomain(ctx, n.db, domains)
	for _, r := range n.replicas() {
		rep := r.Replication(ctx)
		stats := r.Stats()
		ds := metrics.DomainState{Domain: string(r.Domain()), Seq: rep.SeenThrough.Seq, AppliedThrough: rep.AppliedThrough.Seq,
			LongestTx: stats.Apply.LongestTx, LongestTxRecords: stats.Apply.LongestTxRecords, LongestBatch: stats.Apply.LongestBatch,
			LongestBatchRows: stats.Apply.LongestBatchRows, Retained: stats.Retained, Alarms: map[string]bool{}}
		if rep.LogEnd != nil && rep.Lag != nil {
			ds.LogMeasured, ds.LogLastSeq, ds.LagRecords, ds.LagSeconds = true, rep.LogEnd.Seq, rep.Lag.Seq, rep.Lag.Seconds
		}
		ds.LogBytes, ds.LogCeiling, ds.OrdinaryCeiling = r.Fill()
		floor, floorErr := r.Floor()
		ds.TrimFloor, ds.FloorUnread = floor, floorErr != nil
		ds.LedgerRows = ledgerRows[string(r.Domain())]
		for _, name := range statelog.AlarmNames {
			ds.Alarms[name] = false
		}
		for _, a := range r.Alarms(ctx) {
			ds.Alarms[a.Name] = true
		}
		st.Domains = append(st.Domains, ds)
	}
	if wm, lost, err := ledger.Watermark(ctx, n.db); err == nil && lost {
		st.LedgerWatermark = wm
	}
	st.Duties = n.dutyStates(ctx)
	return st
}

// Audit is the node's audit trail (GET /api/v1/audit).
func (n *Node) Audit() *audit.Trail { return &audit.Trail{DB: n.db, Replicas: n.replicas()} }
