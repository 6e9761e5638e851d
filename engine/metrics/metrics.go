// Package metrics owns a node's Prometheus registry and every collector
// on it: the seeds' counters (crewlet.statelog.* with dots as
// underscores), the counters and histograms the write path, the applier,
// the barriers and the surfaces move where their events happen, and a
// collector that reads the node's replication state (positions, lag,
// fill, ledger, alarms) at scrape time from what the engine already
// knows; and the write phases' totals read back (phases.go) for the
// benchmarks that say where a write's time went. Each node has its own
// registry, never the global one, so several nodes in one process (the
// fleet tests) do not collide.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/crewlet/crewlet/engine"
)

// Namespace prefixes every metric.
const Namespace = "crewlet"

// Registry is one node's metrics.
type Registry struct {
	reg *prometheus.Registry

	txAborts        *prometheus.CounterVec
	applyRetries    *prometheus.CounterVec
	recordsGated    *prometheus.CounterVec
	publishRefusals *prometheus.CounterVec
	writeOutcomes   *prometheus.CounterVec
	barrierAppends  *prometheus.CounterVec
	barrierReads    *prometheus.HistogramVec
	endReads        *prometheus.CounterVec
	writePhases     *prometheus.HistogramVec
	txSeconds       *prometheus.HistogramVec
	batchSeconds    *prometheus.HistogramVec
	refusals        *prometheus.CounterVec
	toolCalls       *prometheus.CounterVec
	toolSeconds     *prometheus.HistogramVec
}

// applyBuckets spans an ordinary commit (a millisecond) to the seeds'
// bulk update (about 16 s of applier occupancy) and the 30 s retry budget.
var applyBuckets = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2, 4, 8, 16, 32}

// callBuckets spans a stale read to a write that waits out its 5 s write
// wait, and a gesture of several such writes.
var callBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// phaseBuckets spans a write's decide (tens of microseconds) to a
// settle that waits out the 5 s write wait or a lost answer's resolution.
var phaseBuckets = []float64{.00005, .0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30}

// New builds a registry with every collector this package defines and
// the Go runtime's and process's own.
func New() *Registry {
	r := &Registry{reg: prometheus.NewRegistry()}
	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		c := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: name, Help: help}, labels)
		r.reg.MustRegister(c)
		return c
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		h := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: buckets}, labels)
		r.reg.MustRegister(h)
		return h
	}
	r.txAborts = counter("statelog_apply_tx_aborts", "Apply transactions rolled back (crewlet.statelog.apply.tx.aborts): zero on a healthy node; non-zero is the retry budget being spent.", "domain")
	r.applyRetries = counter("statelog_apply_retries", "Apply attempts retried in place after a failure (crewlet.statelog.apply.retries).", "domain")
	r.recordsGated = counter("statelog_records_gated", "Durable records this node's applier dropped, by the gate that dropped them (crewlet.statelog.records_gated); the records_gated alarm reads it.", "domain", "gate")
	r.publishRefusals = counter("statelog_publish_refusals", "Writes the write path refused, by reason: a gate's name where what was appended applies nowhere (crewlet.statelog.publish.refusals), else the refusal code.", "domain", "reason")
	r.writeOutcomes = counter("statelog_write_outcomes", "Writes answered, by outcome: applied, pending, unknown.", "domain", "outcome")
	r.barrierAppends = counter("statelog_barrier_appends", "Barrier records appended for linearizable reads.", "domain")
	r.endReads = counter("statelog_end_reads", "Questions to a one-replica log for its end, asked for linearizable reads instead of a barrier (each may answer several reads).", "domain")
	r.barrierReads = histogram("statelog_barrier_reads", "Linearizable reads answered by one barrier append (coalescing).", []float64{1, 2, 4, 8, 16, 32, 64, 128}, "domain")
	r.writePhases = histogram(writePhaseName, "Where a write's time goes, by phase of each round: decide, check (a create's read of the stream's creation instant), append (until the broker answers), settle (until this node has applied what the answer names).", phaseBuckets, "domain", "phase")
	r.txSeconds = histogram("statelog_apply_tx_seconds", "Duration of one committed apply transaction.", applyBuckets, "domain")
	r.batchSeconds = histogram("statelog_apply_batch_seconds", "Duration of applying one delivered batch (one or more transactions, retries included).", applyBuckets, "domain")
	r.refusals = counter("refusals", "Refusals answered, by code and surface.", "code", "surface")
	r.toolCalls = counter("tool_calls", "MCP tool calls, by tool and surface.", "tool", "surface")
	r.toolSeconds = histogram("tool_call_seconds", "MCP tool call latency, by tool and surface.", callBuckets, "tool", "surface")
	r.reg.MustRegister(prometheus.NewGoCollector(), prometheus.NewProcessCollector(prometheus.ProcessCollectorOpts{}))
	return r
}

// Handler serves the registry in the Prometheus text exposition format.
func (r *Registry) Handler() http.Handler {
	return promhttp.HandlerFor(r.reg, promhttp.HandlerOpts{})
}

// Register adds a collector of the caller's (the node's state collector).
func (r *Registry) Register(c prometheus.Collector) error { return r.reg.Register(c) }

// Gatherer is the registry as a gatherer (tests read it without HTTP).
func (r *Registry) Gatherer() prometheus.Gatherer { return r.reg }

// Refusal counts one refusal answered on surface.
func (r *Registry) Refusal(code, surface string) {
	if r == nil || code == "" {
		return
	}
	r.refusals.WithLabelValues(code, surface).Inc()
}

// ToolCall counts one MCP tool call on surface and its latency; code is
// the refusal it answered, empty when it answered.
func (r *Registry) ToolCall(tool, surface string, took time.Duration, code string) {
	if r == nil {
		return
	}
	r.toolCalls.WithLabelValues(tool, surface).Inc()
	r.toolSeconds.WithLabelValues(tool, surface).Observe(took.Seconds())
	r.Refusal(code, surface)
}

// Domain is the registry's counters for one domain: what the replication
// framework moves where its events happen. A nil *Domain counts nothing,
// so a replica built without metrics (a unit test) needs no registry.
type Domain struct {
	r      *Registry
	domain string
}

// Domain is the counters of domain d.
func (r *Registry) Domain(d string) *Domain {
	if r == nil {
		return nil
	}
	// The counters a healthy node holds at zero are exposed at zero from
	// the start (the seeds: tx.aborts "reads zero on a healthy node"), so
	// an alert rule finds the series before the first event.
	r.txAborts.WithLabelValues(d)
	r.applyRetries.WithLabelValues(d)
	r.barrierAppends.WithLabelValues(d)
	r.endReads.WithLabelValues(d)
	for _, o := range []string{"applied", "pending", "unknown"} {
		r.writeOutcomes.WithLabelValues(d, o)
	}
	for _, p := range Phases {
		r.writePhases.WithLabelValues(d, p)
	}
	// A write refused is counted by its code, or by the gate that holds
	// what it appended (KnowGate adds those): every code of the table is
	// a reason, at zero until the first refusal.
	for code := range engine.Codes {
		r.publishRefusals.WithLabelValues(d, string(code))
	}
	return &Domain{r: r, domain: d}
}

// KnowGate exposes records_gated under gate, and publish_refusals under
// it as a reason, at zero until the gate drops a record or a write.
func (d *Domain) KnowGate(gate string) {
	if d != nil {
		d.r.recordsGated.WithLabelValues(d.domain, gate)
		d.r.publishRefusals.WithLabelValues(d.domain, gate)
	}
}

// TxAborted counts an apply transaction rolled back.
func (d *Domain) TxAborted() {
	if d != nil {
		d.r.txAborts.WithLabelValues(d.domain).Inc()
	}
}

// Retried counts an apply attempt retried in place.
func (d *Domain) Retried() {
	if d != nil {
		d.r.applyRetries.WithLabelValues(d.domain).Inc()
	}
}

// Gated counts a record the applier dropped under gate.
func (d *Domain) Gated(gate string) {
	if d != nil {
		d.r.recordsGated.WithLabelValues(d.domain, gate).Inc()
	}
}

// PublishRefused counts a write the write path refused, by reason.
func (d *Domain) PublishRefused(reason string) {
	if d != nil {
		d.r.publishRefusals.WithLabelValues(d.domain, reason).Inc()
	}
}

// Outcome counts a write answered with outcome.
func (d *Domain) Outcome(outcome string) {
	if d != nil && outcome != "" {
		d.r.writeOutcomes.WithLabelValues(d.domain, outcome).Inc()
	}
}

// TxApplied observes one committed apply transaction.
func (d *Domain) TxApplied(took time.Duration) {
	if d != nil {
		d.r.txSeconds.WithLabelValues(d.domain).Observe(took.Seconds())
	}
}

// BatchApplied observes one delivered batch applied.
func (d *Domain) BatchApplied(took time.Duration) {
	if d != nil {
		d.r.batchSeconds.WithLabelValues(d.domain).Observe(took.Seconds())
	}
}

// BarrierAppended counts one barrier append and the reads it answered.
func (d *Domain) BarrierAppended(reads int) {
	if d != nil {
		d.r.barrierAppends.WithLabelValues(d.domain).Inc()
		d.r.barrierReads.WithLabelValues(d.domain).Observe(float64(reads))
	}
}

// EndRead counts one question to a one-replica log for its end, asked
// instead of a barrier append.
func (d *Domain) EndRead() {
	if d != nil {
		d.r.endReads.WithLabelValues(d.domain).Inc()
	}
}
