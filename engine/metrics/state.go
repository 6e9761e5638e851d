package metrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// DomainState is one domain's replication state as the engine knows it
// at a scrape: nothing here is counted by this package, it is read.
type DomainState struct {
	Domain string
	// Seq is the checkpoint; AppliedThrough the prefix actually applied.
	Seq, AppliedThrough uint64
	// LogMeasured says the broker answered the log's end just now:
	// LogLastSeq and LagRecords are then set.
	LogMeasured bool
	LogLastSeq  uint64
	LagRecords  uint64
	// LagSeconds is nil where the drain rate is not measured yet.
	LagSeconds *float64
	// The longest apply transaction and batch observed since the node
	// started (the retention answer publishes the same).
	LongestTx        time.Duration
	LongestTxRecords int
	LongestBatch     int
	LongestBatchRows int
	// LogBytes is what the log holds; LogCeiling its byte ceiling and
	// OrdinaryCeiling what ordinary appends are held to (0: none).
	LogBytes, LogCeiling, OrdinaryCeiling int64
	// Retained is the records held undecoded (deferred).
	Retained int64
	// LedgerRows is the operation ledger's rows of this domain.
	LedgerRows int64
	// TrimFloor is the log's published trim floor as this node last read
	// it (the trim has removed records through it); FloorUnread says the
	// last read failed (reads refuse floor_unknown meanwhile).
	TrimFloor   uint64
	FloorUnread bool
	// Alarms is every alarm this domain can raise, true where it is up.
	Alarms map[string]bool
}

// NodeState is what a scrape reads from the node.
type NodeState struct {
	Domains []DomainState
	// LedgerWatermark is how far back the ledger may have lost rows;
	// zero while it has lost none.
	LedgerWatermark time.Time
	// Duties are the duties this node campaigns for.
	Duties []DutyState
}

// DutyState is one duty as this node sees it: whether it holds it, who
// the lease names (empty: vacant, or unread), and the holdings it took
// and lost since it started.
type DutyState struct {
	Duty           string
	Held           bool
	Holder         string
	Acquired, Lost uint64
}

// StateFunc reads the node's state; it is called once per scrape.
type StateFunc func(ctx context.Context) NodeState

// stateCollector turns a StateFunc into gauges at scrape time, so the
// engine exposes what it already knows instead of keeping gauges current.
type stateCollector struct {
	read    StateFunc
	timeout time.Duration
	descs   map[string]*prometheus.Desc
}

// scrapeTimeout bounds the broker calls one scrape makes (the log's end
// and fill, asked of each domain's log).
const scrapeTimeout = 3 * time.Second

// domainGauges names each per-domain gauge and says what it is.
var domainGauges = [][2]string{
	{"statelog_seq", "The domain's checkpoint: the last record this node consumed."},
	{"statelog_applied_through", "The prefix this node actually applied (below seq while a record is retained)."},
	{"statelog_log_last_seq", "The log's end as the broker answered it at this scrape."},
	{"statelog_lag_records", "Records on the log this node has not consumed."},
	{"statelog_lag_seconds", "The lag in seconds at this node's measured drain rate (absent until measured)."},
	{"statelog_longest_tx_seconds", "The longest apply transaction observed since the node started."},
	{"statelog_longest_tx_records", "Records in the longest apply transaction observed."},
	{"statelog_longest_batch_records", "The largest batch of records applied since the node started."},
	{"statelog_longest_batch_rows", "The most rows one batch wrote since the node started."},
	{"statelog_log_bytes", "Bytes the domain's log holds."},
	{"statelog_log_ceiling_bytes", "The log's byte ceiling on the broker (0: none)."},
	{"statelog_log_ordinary_ceiling_bytes", "The ceiling ordinary appends (writes, barriers) are held to; the rest is kept for gate records."},
	{"statelog_retained_records", "Records held undecoded (deferred) by this build."},
	{"ledger_rows", "Rows in the operation ledger for the domain."},
	{"statelog_trim_floor", "The log's published trim floor as this node last read it: records through it may be gone from the log."},
	{"statelog_trim_floor_unread", "1 while this node cannot read the log's published trim floor (its reads refuse floor_unknown), else 0."},
}

// NewStateCollector is a collector reading read at every scrape.
func NewStateCollector(read StateFunc) prometheus.Collector {
	c := &stateCollector{read: read, timeout: scrapeTimeout, descs: map[string]*prometheus.Desc{}}
	for _, g := range domainGauges {
		c.descs[g[0]] = prometheus.NewDesc(Namespace+"_"+g[0], g[1], []string{"domain"}, nil)
	}
	c.descs["ledger_watermark"] = prometheus.NewDesc(Namespace+"_ledger_watermark_seconds",
		"Unix time before which the ledger may have lost rows to its 30-day sweep (0: it has lost none).", nil, nil)
	c.descs["alarm"] = prometheus.NewDesc(Namespace+"_alarm",
		"1 while the named alarm is up on this node for the domain, else 0: records_gated, deferral, log_full_approaching, applier_faulted.", []string{"name", "domain"}, nil)
	c.descs["duty_held"] = prometheus.NewDesc(Namespace+"_duty_held", "1 while this node holds the named duty (engine/duty), else 0.", []string{"duty"}, nil)
	c.descs["duty_holder"] = prometheus.NewDesc(Namespace+"_duty_holder",
		"1 for the node the duty's lease names now, as this node reads the leases' bucket (holder=\"\": vacant or unread).", []string{"duty", "holder"}, nil)
	c.descs["duty_acquired"] = prometheus.NewDesc(Namespace+"_duty_acquired_total", "Holdings of the duty this node took since it started.", []string{"duty"}, nil)
	c.descs["duty_lost"] = prometheus.NewDesc(Namespace+"_duty_lost_total",
		"Holdings of the duty this node lost since it started: a renewal refused, or fenced after half a TTL without one.", []string{"duty"}, nil)
	return c
}

func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	st := c.read(ctx)
	gauge := func(name string, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(c.descs[name], prometheus.GaugeValue, v, labels...)
	}
	for _, d := range st.Domains {
		gauge("statelog_seq", float64(d.Seq), d.Domain)
		gauge("statelog_applied_through", float64(d.AppliedThrough), d.Domain)
		if d.LogMeasured {
			gauge("statelog_log_last_seq", float64(d.LogLastSeq), d.Domain)
			gauge("statelog_lag_records", float64(d.LagRecords), d.Domain)
			if d.LagSeconds != nil {
				gauge("statelog_lag_seconds", *d.LagSeconds, d.Domain)
			}
		}
		gauge("statelog_longest_tx_seconds", d.LongestTx.Seconds(), d.Domain)
		gauge("statelog_longest_tx_records", float64(d.LongestTxRecords), d.Domain)
		gauge("statelog_longest_batch_records", float64(d.LongestBatch), d.Domain)
		gauge("statelog_longest_batch_rows", float64(d.LongestBatchRows), d.Domain)
		gauge("statelog_log_bytes", float64(d.LogBytes), d.Domain)
		gauge("statelog_log_ceiling_bytes", float64(d.LogCeiling), d.Domain)
		gauge("statelog_log_ordinary_ceiling_bytes", float64(d.OrdinaryCeiling), d.Domain)
		gauge("statelog_retained_records", float64(d.Retained), d.Domain)
		gauge("ledger_rows", float64(d.LedgerRows), d.Domain)
		gauge("statelog_trim_floor", float64(d.TrimFloor), d.Domain)
		unread := 0.0
		if d.FloorUnread {
			unread = 1
		}
		gauge("statelog_trim_floor_unread", unread, d.Domain)
		for name, up := range d.Alarms {
			v := 0.0
			if up {
				v = 1
			}
			gauge("alarm", v, name, d.Domain)
		}
	}
	wm := 0.0
	if !st.LedgerWatermark.IsZero() {
		wm = float64(st.LedgerWatermark.UnixNano()) / 1e9
	}
	gauge("ledger_watermark", wm)
	for _, d := range st.Duties {
		held := 0.0
		if d.Held {
			held = 1
		}
		gauge("duty_held", held, d.Duty)
		gauge("duty_holder", 1, d.Duty, d.Holder)
		ch <- prometheus.MustNewConstMetric(c.descs["duty_acquired"], prometheus.CounterValue, float64(d.Acquired), d.Duty)
		ch <- prometheus.MustNewConstMetric(c.descs["duty_lost"], prometheus.CounterValue, float64(d.Lost), d.Duty)
	}
}
