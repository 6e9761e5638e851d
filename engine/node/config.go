package node

import (
	"log/slog"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/broker"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/trim"
)

// Modes a node runs in. maintenance and seal are capacity windows that
// publish nothing: linearizable reads and writes refuse `maintenance`.
const (
	ModeNormal      = "normal"
	ModeMaintenance = "maintenance"
	ModeSeal        = "seal"
)

// DefaultAckEvery is how often at most an applier acknowledges what it
// applied: on a replicated stream every acknowledgement is a replicated
// proposal of its own.
const DefaultAckEvery = 20 * time.Millisecond

// Config is everything one node is built from. cmd/crewlet maps the YAML
// file and flags onto it; zero fields take the defaults below (withDefaults
// sets them, in one place), and Validate holds every rule its values obey.
type Config struct {
	// Name is node.name: the durable consumers and the writer field of
	// every record carry it. Default: the host name.
	Name string
	// DataDir holds crewlet-replicated.db and, unless Stream.StoreDir is
	// set, the broker store under DataDir/stream.
	DataDir string
	// Mode is normal, maintenance or seal.
	Mode   string
	Stream StreamConfig
	Store  StoreConfig
	// Retention is retention.*: the backup schedule and the snapshot
	// repository.
	Retention RetentionConfig
	// ApplyRetryBudget is how long a failing apply retries before the
	// domain is faulted and reads refuse `stalled` (default 30 s).
	ApplyRetryBudget time.Duration
	// WriteWait is how long a write waits for this node to apply its own
	// record before answering pending (default 5 s).
	WriteWait time.Duration
	// ReadBudget is how long a read waits for a position (default 2 s).
	ReadBudget time.Duration
	// HeartbeatInterval is how often the node publishes its positions in
	// the positions register (default 5 s).
	HeartbeatInterval time.Duration
	// PublishTimeout bounds one append's wait for the broker's answer
	// (default 5 s); past it the append is settled from the log or unknown.
	PublishTimeout time.Duration
	// DrainWait bounds how long closing the node waits for each reader's
	// drain to be confirmed, which a broker that is gone never does
	// (default broker.DefaultDrainWait, 5 s).
	DrainWait time.Duration
	// SingleAppends sends every append alone, never combined into an
	// atomic batch (see broker's combine.go): for benchmarks comparing
	// the two in one run.
	SingleAppends bool
	// BarrierReads makes a linearizable read append a barrier even on a
	// log of one replica, where by default it asks the log's one server
	// where the log ends (statelog.EndReader): for the tests of barriers
	// and benchmarks comparing the two in one run.
	BarrierReads bool
	// MarkedZeroWrites makes a write at an expectation of zero ride a
	// creation mark even on a log of one replica, as it does on a
	// replicated one (statelog's zeromark.go), rather than ask the
	// stream's creation instant: for the tests of marks on a node of one.
	MarkedZeroWrites bool
	// GroupReaders keeps each reader of a replicated stream a group on
	// the stream's replicas, as on an external broker, rather than one
	// replica on the node's own embedded broker server (broker's
	// place.go): for benchmarks comparing the two in one run, and the
	// tests of a group reader's lead.
	GroupReaders bool
	Clock        engine.Clock
	Logger       *slog.Logger
	// Holder describes this process in the data directory's lock file, so
	// a second process refused the directory can name it (for example
	// "crewlet serve, operator MCP at http://127.0.0.1:7420/operator/mcp").
	Holder string
	// Domains are the domains the node runs, in order (default Builtin()).
	Domains []statelog.Spec
	// DeferralGrace is how long a retained record waits before the
	// deferral alarm names it (default the seeds' 30 minutes).
	DeferralGrace time.Duration
	// ProgressEvery is how often a domain catching up with its log after
	// the boot (a rebuild, a node back from a long stop) logs its progress,
	// and how often an adoption's snapshot download does (default 10 s).
	ProgressEvery time.Duration
	// AckEvery spaces each applier's acknowledgements to the broker: at
	// most one per AckEvery (default DefaultAckEvery; negative: one per
	// applied batch). See statelog's acker.
	AckEvery time.Duration
	// Company is the company.* block: where the company's days are cut.
	Company CompanyConfig
	// DutyTTL is how long a duty's lease outlives its holder's last
	// renewal (default duty.DefaultTTL): a killed holder's duty moves
	// within it. It is the leases' bucket's, the same on every node.
	DutyTTL time.Duration
	// Trim is the retention trim's settings (retention.*).
	Trim TrimConfig
	// Embedder is embedder.*: what embeds text for a domain that asks for
	// an embedder (the vectors domain); zero is the builtin model.
	Embedder embed.Config
	// Hooks are test and failpoint seams; nil in production.
	Hooks Hooks
}

// ParseTrimMinAge reads retention.trim_min_age: a positive Go duration
// ("720h"); empty is the default (trim.DefaultMinAge).
func ParseTrimMinAge(s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, &engine.ConfigError{Field: "retention.trim_min_age", Value: s, Reason: "is not a positive duration such as \"720h\" (the age floor: no record younger is trimmed)"}
	}
	return d, nil
}

// TrimConfig is how the node trims its logs (engine/trim).
type TrimConfig struct {
	// MinAge is retention.trim_min_age, the age floor: no record younger
	// is removed (default trim.DefaultMinAge, 30 days).
	MinAge time.Duration
	// Interval is how often the trim runs (default trim.DefaultInterval).
	Interval time.Duration
	// Backups is the backup gate's source: the trim never passes what it
	// reached. Nil: the node's own snapshot repository.
	Backups trim.Backups
}

// StreamConfig is the stream.* block of Tier A.
type StreamConfig struct {
	// Type is "embedded" (default) or "nats" (a later issue).
	Type string
	// Sync is "always" (default) or a Go duration such as "30s".
	Sync string
	// StoreDir is stream.store_dir (default DataDir/stream).
	StoreDir string
	// StoreMaxBytes is stream.store_max_bytes (0: the broker's default).
	StoreMaxBytes int64
	// LogMaxBytes are the logs' byte ceilings, by the Tier A field each
	// domain names (statelog.Spec.CeilingKey, e.g.
	// stream.tracker_log_max_bytes); a log without one takes its
	// domain's default.
	LogMaxBytes map[string]int64
	// DuplicateWindow is the streams' Nats-Msg-Id window (default 2 min).
	DuplicateWindow time.Duration
	// Replicas is stream.replicas: the replica count a missing stream is
	// created with (default 1 alone, 3 on a cluster). A stream that exists
	// keeps its own.
	Replicas int
	// Cluster is stream.cluster.*: set Listen to cluster the embedded broker.
	Cluster ClusterConfig
	// URLs is stream.urls: the external NATS servers of stream.type: nats.
	URLs []string
	// Client is stream.client.*: the embedded broker's client port, opened
	// for nodes without the data role.
	Client ClientConfig
	// Leaf is stream.leaf.*: a satellite whose broker is a leaf node. Not
	// built yet: Validate refuses it, so a node never runs as something it
	// is not.
	Leaf LeafConfig
	// ClusterWait bounds how long a boot waits for the cluster to elect a
	// JetStream meta leader and place the streams (default 2 min).
	ClusterWait time.Duration
}

// ClusterConfig is stream.cluster.*.
type ClusterConfig struct {
	// Name is stream.cluster.name, the same on every node.
	Name string
	// Listen is stream.cluster.listen: host:port of the route listener.
	Listen string
	// Routes is stream.cluster.routes: nats://host:port of the peers.
	Routes []string
	// Advertise is stream.cluster.advertise: the route address gossiped
	// to peers (the fault harness sets a dead one; see broker.ClusterOptions).
	Advertise string
}

// ClientConfig is stream.client.*.
type ClientConfig struct {
	// Listen is stream.client.listen: host:port of the client listener
	// (unset: the broker takes no client from the network).
	Listen string
	// Token is stream.client.token: what every client presents, required
	// with Listen.
	Token string
}

// LeafConfig is stream.leaf.*.
type LeafConfig struct {
	// URLs is stream.leaf.urls: the cluster members a leaf broker joins.
	URLs []string
}

// CompanyConfig is the company.* block of Tier A.
type CompanyConfig struct {
	// Timezone is company.timezone: an IANA time zone name
	// ("Europe/Paris"), where the company's days are cut (the usage
	// domain's days). Default UTC.
	Timezone string
}

// Location is the company's time zone (UTC when unset); Validate has
// refused a name that names none.
func (c CompanyConfig) Location() *time.Location {
	if c.Timezone == "" {
		return time.UTC
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return time.UTC
	}
	return loc
}

// ParseTimezone checks company.timezone: empty (UTC) or an IANA zone
// name this build knows ("Europe/Paris", "UTC").
func ParseTimezone(s string) error {
	if s == "" {
		return nil
	}
	if _, err := time.LoadLocation(s); err != nil || s == "Local" {
		return &engine.ConfigError{Field: "company.timezone", Value: s, Reason: "is not an IANA time zone name such as \"Europe/Paris\" or \"UTC\" (the company's days are cut there)"}
	}
	return nil
}

// StoreConfig is the store.* block of Tier A.
type StoreConfig struct {
	// BusyTimeoutSeconds is store.busy_timeout_seconds (default 5).
	BusyTimeoutSeconds int
}

// Hooks are seams for tests and failpoints.
type Hooks struct {
	// BeforeApplyCommit runs inside the apply transaction of each batch,
	// after the rows and before the commit; an error fails the batch.
	BeforeApplyCommit func(domain engine.Domain, lastSeq uint64) error
	// WrapLog, when set, wraps a domain's log before its replica uses it:
	// a test seam for faults at the log boundary (a publish that lands
	// and whose acknowledgement is lost).
	WrapLog func(domain engine.Domain, l statelog.Log) statelog.Log
	// ClientURL, when set, puts the node's broker connection on TCP via
	// the URL it returns for the broker's (a proxy that drops acks).
	ClientURL func(brokerURL string) string
	// SnapshotArtefact, when set, runs on every artefact this node takes
	// before it is stored (a test corrupts one there).
	SnapshotArtefact func(path string) error
	// Adopting, when set, runs before this node asks a donor for a
	// snapshot; an error skips the donor (a test holds a node below the
	// floor there).
	Adopting func(donor string) error
	// CeilingRead, when set, bounds the boot's read of the logs'
	// ceilings instead of the page's two seconds and thirty (a test of
	// an unanswering broker).
	CeilingRead *broker.CeilingRead
}

// Defaults.
const (
	DefaultDataDir          = "./crewlet-data"
	DefaultDuplicateWindow  = 2 * time.Minute
	DefaultApplyRetryBudget = 30 * time.Second
	DefaultWriteWait        = 5 * time.Second
	DefaultReadBudget       = 2 * time.Second
	DefaultBusyTimeout      = 5
)
