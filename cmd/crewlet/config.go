package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/crewlet/crewlet/domains"

	"go.yaml.in/yaml/v3"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/embed"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/token"
)

// Config is the YAML file of Tier A fields, nested as the seeds name them
// (`stream: {sync: always}` is stream.sync). It only maps the file: zero
// values mean "unset", and the rules and defaults of each block are the
// package's that uses it (NodeConfig, HTTPConfig, operator.token).
type Config struct {
	Node     NodeSection     `yaml:"node"`
	Company  CompanySection  `yaml:"company"`
	Stream   StreamSection   `yaml:"stream"`
	Store    StoreSection    `yaml:"store"`
	Operator OperatorSection `yaml:"operator"`
	HTTP     HTTPSection     `yaml:"http"`
	MCP      MCPSection      `yaml:"mcp"`
	// Retention is retention.*: the backup schedule and the snapshot
	// repository.
	Retention RetentionSection `yaml:"retention"`
	// Embedder is embedder.*: what embeds the vectors domain's sources
	// and the searches' queries.
	Embedder EmbedderSection `yaml:"embedder"`
}

// EmbedderSection is embedder.* (engine/embed.Config holds its rules).
type EmbedderSection struct {
	// Provider is embedder.provider: builtin (default: in-process, no
	// network), openai (an OpenAI-compatible /v1/embeddings server) or
	// none (this node embeds nothing; its searches rank by words).
	Provider string `yaml:"provider"`
	// URL is embedder.url: the server's base URL.
	URL string `yaml:"url"`
	// Model is embedder.model: the model the server is asked for.
	Model string `yaml:"model"`
	// Dimensions is embedder.dimensions: the length of its vectors.
	Dimensions int `yaml:"dimensions"`
	// APIKeyEnv is embedder.api_key_env: the environment variable holding
	// the bearer token (never the key itself).
	APIKeyEnv string `yaml:"api_key_env"`
	// Timeout is embedder.timeout: one request's bound, a Go duration
	// (default 30s).
	Timeout string `yaml:"timeout"`
	// BatchSize is embedder.batch_size: texts per request (default 32).
	BatchSize int `yaml:"batch_size"`
	// MinSimilarity is embedder.min_similarity: the similarity below
	// which a nearest neighbour is not an answer (default 0.3).
	MinSimilarity float64 `yaml:"min_similarity"`
}

// config maps embedder.*; a bad timeout is refused here, the rest by
// embed.Config.Validate.
func (e EmbedderSection) config() (embed.Config, error) {
	c := embed.Config{Provider: e.Provider, URL: e.URL, Model: e.Model, Dimensions: e.Dimensions, APIKeyEnv: e.APIKeyEnv, BatchSize: e.BatchSize, MinSimilarity: e.MinSimilarity}
	if e.Timeout != "" {
		d, err := time.ParseDuration(e.Timeout)
		if err != nil || d <= 0 {
			return c, &ConfigError{Field: "embedder.timeout", Value: e.Timeout, Reason: "is not a positive duration such as \"30s\""}
		}
		c.Timeout = d
	}
	return c, nil
}

// NodeSection is node.*.
type NodeSection struct {
	// Name is node.name (default: the host name).
	Name string `yaml:"name"`
	// Mode is node.mode: normal, maintenance or seal (default normal).
	Mode string `yaml:"mode"`
}

// CompanySection is company.*.
type CompanySection struct {
	// Timezone is company.timezone: the IANA time zone the company's
	// days are cut in (its usage days; default UTC).
	Timezone string `yaml:"timezone"`
}

// StreamSection is stream.*.
type StreamSection struct {
	// Type is stream.type: embedded (default) or nats.
	Type string `yaml:"type"`
	// Sync is stream.sync: always (default) or a Go duration like 30s.
	Sync string `yaml:"sync"`
	// StoreDir is stream.store_dir (default <data dir>/stream).
	StoreDir string `yaml:"store_dir"`
	// StoreMaxBytes is stream.store_max_bytes.
	StoreMaxBytes ByteSize `yaml:"store_max_bytes"`
	// LogMaxBytes are the logs' byte ceilings, by field: each domain names
	// its own (stream.tracker_log_max_bytes, stream.pages_log_max_bytes,
	// ...: statelog.Spec.CeilingKey), so a domain adds its key here
	// without a field of its own.
	LogMaxBytes map[string]ByteSize `yaml:",inline"`
	// Replicas is stream.replicas: replicas of a stream this node creates
	// (default 1 alone, 3 clustered); an existing stream keeps its own.
	Replicas int `yaml:"replicas"`
	// Cluster is stream.cluster.*: clusters the embedded broker.
	Cluster ClusterSection `yaml:"cluster"`
	// URLs is stream.urls: the servers of stream.type: nats.
	URLs []string `yaml:"urls"`
	// Leaf is stream.leaf.*: a satellite whose broker is a leaf node.
	Leaf LeafSection `yaml:"leaf"`
	// Client is stream.client.*: the embedded broker's client port, for
	// nodes without the data role (crewlet mcp --join).
	Client ClientSection `yaml:"client"`
}

// ClientSection is stream.client.*.
type ClientSection struct {
	// Listen is stream.client.listen: host:port the embedded broker takes
	// clients on (unset: none from the network).
	Listen string `yaml:"listen"`
	// Token is stream.client.token: what every client presents; required
	// with Listen, the same on every node of a fleet.
	Token string `yaml:"token"`
}

// ClusterSection is stream.cluster.*.
type ClusterSection struct {
	// Name is stream.cluster.name, the same on every node of the cluster.
	Name string `yaml:"name"`
	// Listen is stream.cluster.listen: host:port of the route listener.
	Listen string `yaml:"listen"`
	// Routes is stream.cluster.routes: nats://host:port of every peer.
	Routes []string `yaml:"routes"`
	// Advertise is stream.cluster.advertise: the route address gossiped to
	// peers (default: the listener).
	Advertise string `yaml:"advertise"`
}

// LeafSection is stream.leaf.*.
type LeafSection struct {
	// URLs is stream.leaf.urls: the cluster members a leaf broker joins.
	URLs []string `yaml:"urls"`
}

// RetentionSection is retention.*.
type RetentionSection struct {
	// BackupInterval is retention.backup_interval: "off", or how often
	// the node takes a snapshot ("6h", the default).
	BackupInterval string `yaml:"backup_interval"`
	// SnapshotDir is retention.snapshot_dir: keep snapshots in this
	// directory instead of the broker's object store.
	SnapshotDir string `yaml:"snapshot_dir"`
	// TrimMinAge is retention.trim_min_age: the age floor, a Go duration
	// ("720h", the default); no record younger is trimmed.
	TrimMinAge string `yaml:"trim_min_age"`
}

// StoreSection is store.*.
type StoreSection struct {
	// BusyTimeoutSeconds is store.busy_timeout_seconds (default 5).
	BusyTimeoutSeconds int `yaml:"busy_timeout_seconds"`
}

// OperatorSection is operator.*.
type OperatorSection struct {
	// Token is operator.token; unset, the node generates
	// <data dir>/operator.token on first boot and reuses it.
	Token string `yaml:"token"`
}

// HTTPSection is http.*.
type HTTPSection struct {
	// Listen is http.listen (default httpedge.DefaultListen).
	Listen string `yaml:"listen"`
	// AllowedHosts is http.allowed_hosts: the Host (and Origin) names
	// the node is reached by besides its listen address and loopback,
	// host or host:port, for a node behind a reverse proxy. Unset: none.
	AllowedHosts []string `yaml:"allowed_hosts"`
	// MaxBodyBytes is http.max_body_bytes: the largest request body any
	// route takes (default 4MiB).
	MaxBodyBytes ByteSize `yaml:"max_body_bytes"`
	// MaxConnections is http.max_connections: the most HTTP connections
	// open at once (default 1024).
	MaxConnections int `yaml:"max_connections"`
}

// ConfigError is a field of the file (or a flag) that cannot be used: the
// loader's own (an unknown key, a value of the wrong type) and every
// package's rules answer the same type.
type ConfigError = engine.ConfigError

// ByteSize is a byte count written either as an integer or with a binary
// or decimal unit: 1073741824, 1GiB, 512MiB, 2GB.
type ByteSize int64

var byteUnits = []struct {
	suffix string
	mult   int64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12},
	{"B", 1},
}

// ParseByteSize reads a ByteSize.
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("is empty")
	}
	mult := int64(1)
	num := s
	for _, u := range byteUnits {
		if strings.HasSuffix(s, u.suffix) {
			mult = u.mult
			num = strings.TrimSpace(strings.TrimSuffix(s, u.suffix))
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 {
		return 0, errors.New("is not a byte size (an integer, or with a unit: 512MiB, 4GiB, 2GB)")
	}
	if n > (1<<63-1)/mult {
		return 0, errors.New("is too large")
	}
	return ByteSize(n * mult), nil
}

// UnmarshalYAML accepts an integer or a string with a unit.
func (b *ByteSize) UnmarshalYAML(v *yaml.Node) error {
	if v.Kind != yaml.ScalarNode {
		return errors.New("is not a byte size")
	}
	n, err := ParseByteSize(v.Value)
	if err != nil {
		return err
	}
	*b = n
	return nil
}

// LoadConfig reads the YAML file at path and validates it on its own, so
// a command refuses exactly the files `crewlet validate` refuses, whatever
// its flags override. Unknown keys are refused.
func LoadConfig(path string) (Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return Config{}, fmt.Errorf("config: %w", err)
	}
	defer f.Close()
	return ParseConfig(f)
}

// ParseConfig maps one YAML document of Tier A fields onto Config and
// validates it. A key the file does not know is refused with an error
// naming it in full (stream.sink, not sink), and so is a value of the
// wrong type.
func ParseConfig(r io.Reader) (Config, error) {
	var c Config
	raw, err := io.ReadAll(r)
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	if len(doc.Content) == 0 {
		return c, nil // empty file: every default
	}
	root := doc.Content[0]
	if err := checkKeys(root, reflect.TypeOf(c), ""); err != nil {
		return c, err
	}
	// Decode again with KnownFields as a second guard.
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("config: %s", strings.TrimPrefix(err.Error(), "yaml: unmarshal errors:\n  "))
	}
	return c, c.Validate()
}

// checkKeys refuses any mapping key of n that t (a struct with yaml tags)
// does not declare, naming it by its dotted path.
func checkKeys(n *yaml.Node, t reflect.Type, prefix string) error {
	if t.Kind() != reflect.Struct {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
			return nil
		}
		field := strings.TrimSuffix(prefix, ".")
		if field == "" {
			return &ConfigError{Field: "(file)", Reason: "is not a mapping of Tier A sections (node, stream, store, operator, http)"}
		}
		return &ConfigError{Field: field, Value: n.Value, Reason: "is a section: write its fields nested under it"}
	}
	fields := map[string]reflect.Type{}
	var names []string
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if opts == "inline" && f.Type.Kind() == reflect.Map {
			// An inline map takes the keys the domains name under this
			// section (their log ceilings).
			for _, key := range domainKeys(prefix) {
				fields[key] = f.Type.Elem()
				names = append(names, prefix+key)
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		fields[name] = f.Type
		names = append(names, prefix+name)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		ft, ok := fields[k.Value]
		if !ok {
			return &ConfigError{Field: prefix + k.Value,
				Reason: fmt.Sprintf("is not a Tier A field (line %d); known here: %s", k.Line, strings.Join(names, ", "))}
		}
		if ft.Kind() == reflect.Struct {
			if err := checkKeys(v, ft, prefix+k.Value+"."); err != nil {
				return err
			}
			continue
		}
		// A leaf: decode it alone so a bad value is named by its field.
		if err := v.Decode(reflect.New(ft).Interface()); err != nil {
			return &ConfigError{Field: prefix + k.Value, Value: v.Value, Reason: leafReason(err, ft)}
		}
	}
	return nil
}

func leafReason(err error, t reflect.Type) string {
	var te *yaml.TypeError
	if errors.As(err, &te) {
		switch t.Kind() {
		case reflect.Int, reflect.Int64:
			return "is not an integer"
		case reflect.String:
			return "is not a string"
		}
		return "has the wrong type"
	}
	return err.Error()
}

// Validate checks every value of the file and the flags, each block by
// the package whose rules they are: node.*, stream.* and store.* by the
// node, operator.token by its keeper, http.* by the HTTP edge.
func (c *Config) Validate() error {
	if _, err := c.Embedder.config(); err != nil {
		return err
	}
	nc := c.NodeConfig("")
	nc.Domains = domains.Builtin().Specs()
	if err := nc.Validate(); err != nil {
		return err
	}
	if _, _, err := node.ParseBackupInterval(c.Retention.BackupInterval); err != nil {
		return err
	}
	if _, err := node.ParseTrimMinAge(c.Retention.TrimMinAge); err != nil {
		return err
	}
	if err := token.Check(c.Operator.Token); err != nil {
		return err
	}
	if _, err := c.MCP.Filter(); err != nil {
		return err
	}
	return c.HTTPConfig().Validate()
}

// domainKeys are the Tier A fields the built-in domains name under
// section prefix (stream.: each log's ceiling), without the prefix.
func domainKeys(prefix string) []string {
	var out []string
	for _, sp := range domains.Builtin().Specs() {
		if key, ok := strings.CutPrefix(sp.CeilingKey, prefix); ok && sp.CeilingKey != "" {
			out = append(out, key)
		}
	}
	return out
}

// logCeilings are the log ceilings the file sets, by their Tier A field;
// nil when it sets none.
func (s StreamSection) logCeilings() map[string]int64 {
	var out map[string]int64
	for key, v := range s.LogMaxBytes {
		if v != 0 {
			if out == nil {
				out = map[string]int64{}
			}
			out["stream."+key] = int64(v)
		}
	}
	return out
}

// NodeConfig maps the file onto node.Config for a node on dataDir. Fields
// the file leaves unset stay zero, so node.Open applies its defaults.
func (c *Config) NodeConfig(dataDir string) node.Config {
	return node.Config{
		Name:    c.Node.Name,
		DataDir: dataDir,
		Mode:    c.Node.Mode,
		Stream: node.StreamConfig{
			Type:          c.Stream.Type,
			Sync:          c.Stream.Sync,
			StoreDir:      c.Stream.StoreDir,
			StoreMaxBytes: int64(c.Stream.StoreMaxBytes),
			LogMaxBytes:   c.Stream.logCeilings(),
			Replicas:      c.Stream.Replicas,
			Cluster: node.ClusterConfig{Name: c.Stream.Cluster.Name, Listen: c.Stream.Cluster.Listen,
				Routes: c.Stream.Cluster.Routes, Advertise: c.Stream.Cluster.Advertise},
			URLs:   c.Stream.URLs,
			Client: node.ClientConfig{Listen: c.Stream.Client.Listen, Token: c.Stream.Client.Token},
			Leaf:   node.LeafConfig{URLs: c.Stream.Leaf.URLs},
		},
		Store:     node.StoreConfig{BusyTimeoutSeconds: c.Store.BusyTimeoutSeconds},
		Company:   node.CompanyConfig{Timezone: c.Company.Timezone},
		Retention: c.Retention.nodeConfig(),
		Trim:      c.Retention.trimConfig(),
		Embedder:  c.embedderConfig(),
	}
}

// embedderConfig maps embedder.*; a bad timeout is left to Validate.
func (c *Config) embedderConfig() embed.Config {
	e, _ := c.Embedder.config()
	return e
}

// trimConfig maps retention.trim_min_age; a bad age is left to Validate.
func (r RetentionSection) trimConfig() node.TrimConfig {
	age, _ := node.ParseTrimMinAge(r.TrimMinAge)
	return node.TrimConfig{MinAge: age}
}

// nodeConfig maps retention.*; a bad interval is left to Validate.
func (r RetentionSection) nodeConfig() node.RetentionConfig {
	every, off, _ := node.ParseBackupInterval(r.BackupInterval)
	return node.RetentionConfig{BackupInterval: every, BackupOff: off, SnapshotDir: r.SnapshotDir}
}

// HTTPConfig maps the file's http.* block onto httpedge.Config. Unset
// fields stay zero.
func (c *Config) HTTPConfig() httpedge.Config {
	return httpedge.Config{
		Listen:         c.HTTP.Listen,
		AllowedHosts:   c.HTTP.AllowedHosts,
		MaxBodyBytes:   int64(c.HTTP.MaxBodyBytes),
		MaxConnections: c.HTTP.MaxConnections,
	}
}
