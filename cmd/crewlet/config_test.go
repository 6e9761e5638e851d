package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/internal/httpedge"
	"github.com/crewlet/crewlet/internal/token"
)

// parseConfigCases are TestParseConfig's files: each parses to want, or
// is refused naming field (a ConfigError) or with errSub in its error.
var parseConfigCases = []struct {
	name string
	yaml string
	want Config
	// field is the ConfigError.Field wanted; errSub a substring of the
	// error wanted when the error is not a ConfigError.
	field  string
	errSub string
}{
	{name: "empty", yaml: "", want: Config{}},
	{name: "comments only", yaml: "# nothing\n", want: Config{}},
	{
		name: "every field",
		yaml: `
node:
  name: node-1
  mode: maintenance
stream:
  type: embedded
  sync: always
  store_dir: /var/lib/crewlet/stream
  store_max_bytes: 8GiB
  tracker_log_max_bytes: 4294967296
  pages_log_max_bytes: 1GiB
store:
  busy_timeout_seconds: 9
operator:
  token: 0123456789abcdef0123
http:
  listen: 0.0.0.0:7420
  allowed_hosts: [crewlet.example.com, "proxy.example.net:8443", "[::1]:9000"]
  max_body_bytes: 8MiB
  max_connections: 512
`,
		want: Config{
			Node: NodeSection{Name: "node-1", Mode: "maintenance"},
			Stream: StreamSection{Type: "embedded", Sync: "always", StoreDir: "/var/lib/crewlet/stream",
				StoreMaxBytes: 8 << 30, LogMaxBytes: map[string]ByteSize{"tracker_log_max_bytes": 4 << 30, "pages_log_max_bytes": 1 << 30}},
			Store:    StoreSection{BusyTimeoutSeconds: 9},
			Operator: OperatorSection{Token: "0123456789abcdef0123"},
			HTTP: HTTPSection{Listen: "0.0.0.0:7420", AllowedHosts: []string{"crewlet.example.com", "proxy.example.net:8443", "[::1]:9000"},
				MaxBodyBytes: 8 << 20, MaxConnections: 512},
		},
	},
	{name: "sync duration", yaml: "stream:\n  sync: 30s\n", want: Config{Stream: StreamSection{Sync: "30s"}}},
	{name: "flow style", yaml: "stream: {sync: always, type: embedded}\n", want: Config{Stream: StreamSection{Sync: "always", Type: "embedded"}}},
	{name: "decimal units", yaml: "stream: {store_max_bytes: 2GB}\n", want: Config{Stream: StreamSection{StoreMaxBytes: 2e9}}},
	{name: "nats without sync", yaml: "stream: {type: nats, urls: [nats://h:4222]}\n", want: Config{Stream: StreamSection{Type: "nats", URLs: []string{"nats://h:4222"}}}},

	{name: "unknown top-level key", yaml: "nodes:\n  name: x\n", field: "nodes"},
	{name: "unknown nested key", yaml: "stream:\n  sink: always\n", field: "stream.sink"},
	{name: "dotted key is not nesting", yaml: "stream.sync: always\n", field: "stream.sync"},
	{name: "section given a scalar", yaml: "stream: always\n", field: "stream"},
	{name: "bad sync", yaml: "stream: {sync: sometimes}\n", field: "stream.sync"},
	{name: "zero sync", yaml: "stream: {sync: 0s}\n", field: "stream.sync"},
	{name: "negative sync", yaml: "stream: {sync: -5s}\n", field: "stream.sync"},
	{name: "sync on nats", yaml: "stream: {type: nats, sync: always}\n", field: "stream.sync"},
	{name: "bad type", yaml: "stream: {type: kafka}\n", field: "stream.type"},
	{name: "bad mode", yaml: "node: {mode: frozen}\n", field: "node.mode"},
	{name: "bad node name", yaml: "node: {name: a.b}\n", field: "node.name"},
	{name: "bad byte size", yaml: "stream: {store_max_bytes: lots}\n", field: "stream.store_max_bytes"},
	{name: "negative byte size", yaml: "stream: {pages_log_max_bytes: -1}\n", field: "stream.pages_log_max_bytes"},
	{name: "busy timeout not int", yaml: "store: {busy_timeout_seconds: soon}\n", field: "store.busy_timeout_seconds"},
	{name: "busy timeout negative", yaml: "store: {busy_timeout_seconds: -1}\n", field: "store.busy_timeout_seconds"},
	{name: "short token", yaml: "operator: {token: abc}\n", field: "operator.token"},
	{name: "bad listen", yaml: "http: {listen: localhost}\n", field: "http.listen"},
	{name: "body bytes in bytes", yaml: "http: {max_body_bytes: 1048576}\n", want: Config{HTTP: HTTPSection{MaxBodyBytes: 1 << 20}}},
	{name: "bad body bytes", yaml: "http: {max_body_bytes: huge}\n", field: "http.max_body_bytes"},
	{name: "negative body bytes", yaml: "http: {max_body_bytes: -1}\n", field: "http.max_body_bytes"},
	{name: "connections not int", yaml: "http: {max_connections: many}\n", field: "http.max_connections"},
	{name: "negative connections", yaml: "http: {max_connections: -5}\n", field: "http.max_connections"},
	{name: "allowed host is a scalar", yaml: "http: {allowed_hosts: crewlet.example.com}\n", field: "http.allowed_hosts"},
	{name: "allowed host with scheme", yaml: "http: {allowed_hosts: [\"https://crewlet.example.com\"]}\n", field: "http.allowed_hosts"},
	{name: "allowed host wildcard", yaml: "http: {allowed_hosts: [\"*.example.com\"]}\n", field: "http.allowed_hosts"},
	{name: "allowed host with path", yaml: "http: {allowed_hosts: [crewlet.example.com/mcp]}\n", field: "http.allowed_hosts"},
	{name: "allowed host empty", yaml: "http: {allowed_hosts: [\"\"]}\n", field: "http.allowed_hosts"},
	{name: "allowed host bad port", yaml: "http: {allowed_hosts: [\"crewlet.example.com:99999\"]}\n", field: "http.allowed_hosts"},
	{name: "unknown http key", yaml: "http: {max_body: 1MiB}\n", field: "http.max_body"},
	{name: "bad port", yaml: "http: {listen: 'localhost:99999'}\n", field: "http.listen"},
	{name: "not a mapping", yaml: "- a\n- b\n", field: "(file)"},
	{name: "not yaml", yaml: "stream: {sync: [\n", errSub: "config:"},

	{name: "vectors ceiling", yaml: "stream: {tracker_vectors_max_bytes: 4GiB}\n",
		want: Config{Stream: StreamSection{LogMaxBytes: map[string]ByteSize{"tracker_vectors_max_bytes": 4 << 30}}}},
	{name: "embedder openai", yaml: "embedder: {provider: openai, url: 'http://127.0.0.1:11434', model: nomic-embed-text, dimensions: 768, api_key_env: EMBED_KEY, timeout: 10s, batch_size: 16, min_similarity: 0.4}\n",
		want: Config{Embedder: EmbedderSection{Provider: "openai", URL: "http://127.0.0.1:11434", Model: "nomic-embed-text", Dimensions: 768,
			APIKeyEnv: "EMBED_KEY", Timeout: "10s", BatchSize: 16, MinSimilarity: 0.4}}},
	{name: "embedder builtin", yaml: "embedder: {provider: builtin}\n", want: Config{Embedder: EmbedderSection{Provider: "builtin"}}},
	{name: "embedder unknown provider", yaml: "embedder: {provider: onnx}\n", field: "embedder.provider"},
	{name: "embedder openai without url", yaml: "embedder: {provider: openai, model: m, dimensions: 8}\n", field: "embedder.url"},
	{name: "embedder openai without dimensions", yaml: "embedder: {provider: openai, url: 'https://api.example.com/v1', model: m}\n", field: "embedder.dimensions"},
	{name: "embedder builtin with a model", yaml: "embedder: {model: m}\n", field: "embedder.model"},
	{name: "embedder bad timeout", yaml: "embedder: {timeout: soon}\n", field: "embedder.timeout"},
	{name: "embedder unknown key", yaml: "embedder: {api_key: sk-123}\n", field: "embedder.api_key"},
}

func TestParseConfig(t *testing.T) {
	tests := parseConfigCases
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseConfig(strings.NewReader(tt.yaml))
			switch {
			case tt.field != "":
				var ce *ConfigError
				if !errors.As(err, &ce) {
					t.Fatalf("err = %v, want a ConfigError on %s", err, tt.field)
				}
				if ce.Field != tt.field {
					t.Fatalf("ConfigError.Field = %q, want %q (%v)", ce.Field, tt.field, err)
				}
				if !strings.Contains(err.Error(), tt.field) {
					t.Fatalf("error %q does not name %s", err, tt.field)
				}
			case tt.errSub != "":
				if err == nil || !strings.Contains(err.Error(), tt.errSub) {
					t.Fatalf("err = %v, want one containing %q", err, tt.errSub)
				}
			default:
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if !reflect.DeepEqual(got, tt.want) {
					t.Fatalf("got %+v\nwant %+v", got, tt.want)
				}
			}
		})
	}
}

func TestParseByteSize(t *testing.T) {
	tests := []struct {
		in   string
		want ByteSize
		ok   bool
	}{
		{"0", 0, true},
		{"1024", 1024, true},
		{"1KiB", 1 << 10, true},
		{"512MiB", 512 << 20, true},
		{"4 GiB", 4 << 30, true},
		{"1TiB", 1 << 40, true},
		{"3KB", 3000, true},
		{"10B", 10, true},
		{"", 0, false},
		{"GiB", 0, false},
		{"1.5GiB", 0, false},
		{"-1", 0, false},
		{"99999999999TiB", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseByteSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("ParseByteSize(%q) = %d, %v; want %d, ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

func TestNodeConfig(t *testing.T) {
	c := Config{
		Node:   NodeSection{Name: "n1", Mode: "seal"},
		Stream: StreamSection{Type: "embedded", Sync: "30s", StoreDir: "s", StoreMaxBytes: 1, LogMaxBytes: map[string]ByteSize{"tracker_log_max_bytes": 2, "pages_log_max_bytes": 3}},
		Store:  StoreSection{BusyTimeoutSeconds: 7},
	}
	got := c.NodeConfig("d")
	want := node.Config{
		Name: "n1", DataDir: "d", Mode: "seal",
		Stream: node.StreamConfig{Type: "embedded", Sync: "30s", StoreDir: "s", StoreMaxBytes: 1,
			LogMaxBytes: map[string]int64{"stream.tracker_log_max_bytes": 2, "stream.pages_log_max_bytes": 3}},
		Store: node.StoreConfig{BusyTimeoutSeconds: 7},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	// Unset fields stay zero, so node.Open applies its defaults.
	if z := (&Config{}).NodeConfig("d"); !reflect.DeepEqual(z, node.Config{DataDir: "d"}) {
		t.Fatalf("empty config maps to %+v", z)
	}
}

func TestServeFlagsOverrideFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "crewlet.yaml")
	if err := os.WriteFile(path, []byte("node: {mode: seal}\nhttp: {listen: '127.0.0.1:9000'}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &ServeCommand{Main: &Main{Stderr: os.Stderr}}
	o, err := c.parse([]string{"--config", path})
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.Node.Mode != "seal" || o.Listen != "127.0.0.1:9000" || o.DataDir != node.DefaultDataDir {
		t.Fatalf("from file: %+v", o)
	}
	o, err = c.parse([]string{"--config", path, "--mode", "normal", "--http", "127.0.0.1:9001", "--data", dir})
	if err != nil {
		t.Fatal(err)
	}
	if o.Config.Node.Mode != "normal" || o.Listen != "127.0.0.1:9001" || o.DataDir != dir {
		t.Fatalf("flags did not override: %+v", o)
	}
	o, err = c.parse(nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Listen != httpedge.DefaultListen {
		t.Fatalf("default listen = %q", o.Listen)
	}
	if _, err := c.parse([]string{"--mode", "paused"}); err == nil {
		t.Fatal("--mode paused accepted")
	}
}

func TestMCPFlags(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "tok")
	if err := os.WriteFile(tok, []byte("secret-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &MCPCommand{Main: &Main{Stderr: os.Stderr}}
	o, err := c.parse([]string{"--node", "http://127.0.0.1:7420", "--token-file", tok})
	if err != nil {
		t.Fatal(err)
	}
	if o.NodeURL != "http://127.0.0.1:7420/operator/mcp" || o.Token != "secret-token" {
		t.Fatalf("got %+v", o)
	}
	t.Setenv(token.EnvOperator, "from-env")
	o, err = c.parse([]string{"--node", "http://127.0.0.1:7420/operator/mcp"})
	if err != nil || o.Token != "from-env" {
		t.Fatalf("env token: %+v, %v", o, err)
	}
	for _, args := range [][]string{
		{"--node", "127.0.0.1:7420"},
		{"--node", "http://x", "--data", dir},
		{"--token-file", tok},
		{"extra"},
	} {
		var ue *usageError
		if _, err := c.parse(args); !errors.As(err, &ue) {
			t.Errorf("parse(%q) = %v, want a usage error", args, err)
		}
	}
	t.Setenv(token.EnvOperator, "")
	if _, err := c.parse([]string{"--node", "http://x"}); err == nil {
		t.Error("--node without a token accepted")
	}
}

func TestLoggerComponent(t *testing.T) {
	var buf bytes.Buffer
	l, err := NewLogger(&buf, LogFormatJSON, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	l.Info("a")
	l.With("component", "node", "x", 1).Info("b")
	l.With("x", 1).With("component", "broker").With("y", 2).Info("c")
	l.WithGroup("g").With("component", "inner").Info("d")
	l.With("x", 1).Info("e", "component", "broker", "y", 2)
	var lines []map[string]any
	for i, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		if i != 3 && strings.Count(line, `"component"`) != 1 {
			t.Errorf("line %s has %d component keys", line, strings.Count(line, `"component"`))
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, m)
	}
	want := []string{"cmd", "node", "broker", "cmd", "broker"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), buf.String())
	}
	for i, w := range want {
		if lines[i]["component"] != w {
			t.Errorf("line %d component = %v, want %s", i, lines[i]["component"], w)
		}
	}
	if lines[2]["x"] != float64(1) || lines[2]["y"] != float64(2) {
		t.Errorf("attributes lost around a component change: %v", lines[2])
	}
	if g, _ := lines[3]["g"].(map[string]any); g["component"] != "inner" {
		t.Errorf("grouped component not kept in its group: %v", lines[3])
	}
	if lines[4]["x"] != float64(1) || lines[4]["y"] != float64(2) {
		t.Errorf("attributes lost around a record's own component: %v", lines[4])
	}

	buf.Reset()
	l, err = NewLogger(&buf, LogFormatText, slog.LevelInfo)
	if err != nil {
		t.Fatal(err)
	}
	l.With("component", "node").Info("hello")
	if s := buf.String(); !strings.Contains(s, "component=node") || strings.Contains(s, "\x1b[") {
		t.Errorf("text log on a non-terminal = %q, want uncoloured component=node", s)
	}
	if _, err := NewLogger(&buf, "xml", slog.LevelInfo); err == nil {
		t.Error("--log-format xml accepted")
	}
}

// TestRetentionConfig: retention.backup_interval is "off" or a positive
// duration, and retention.* reaches the node's config.
func TestRetentionConfig(t *testing.T) {
	c, err := ParseConfig(strings.NewReader("retention: {backup_interval: 90m, snapshot_dir: var/snaps}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r := c.NodeConfig("d").Retention; r.BackupInterval != 90*time.Minute || r.BackupOff || r.SnapshotDir != "var/snaps" {
		t.Fatalf("retention: %+v", r)
	}
	c, err = ParseConfig(strings.NewReader("retention: {backup_interval: \"off\"}\n"))
	if err != nil || !c.NodeConfig("d").Retention.BackupOff {
		t.Fatalf("off: %+v %v", c.Retention, err)
	}
	_, err = ParseConfig(strings.NewReader("retention: {backup_interval: sometimes}\n"))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Field != "retention.backup_interval" {
		t.Fatalf("a bad interval: %v", err)
	}
}
