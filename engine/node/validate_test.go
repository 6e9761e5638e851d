package node_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/node"
)

// TestValidate: each rule refuses by the field it is about, with the
// reason the operator reads; unset fields are valid. (cmd/crewlet's
// TestParseConfig and TestFleetConfig drive the same rules from YAML.)
func TestValidate(t *testing.T) {
	cluster := node.ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"nats://127.0.0.1:6223"}}
	valid := []node.Config{
		{},
		{Name: "n1", Mode: node.ModeSeal, Stream: node.StreamConfig{Type: "embedded", Sync: "30s", StoreMaxBytes: 1 << 30}},
		{Stream: node.StreamConfig{Replicas: 3, Cluster: cluster}},
		{Stream: node.StreamConfig{Type: "nats", Replicas: 3, URLs: []string{"nats://h:4222", "tls://h2:4222"}}},
		{Stream: node.StreamConfig{Client: node.ClientConfig{Listen: "0.0.0.0:4222", Token: "a-token-of-16-chars"}}},
		{Store: node.StoreConfig{BusyTimeoutSeconds: 9}},
	}
	for _, c := range valid {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}

	refused := []struct {
		cfg           node.Config
		field, reason string
	}{
		{node.Config{Mode: "frozen"}, "node.mode", "not one of normal"},
		{node.Config{Name: "a.b"}, "node.name", "durable consumers"},
		{node.Config{Stream: node.StreamConfig{Type: "kafka"}}, "stream.type", "not one of embedded, nats"},
		{node.Config{Stream: node.StreamConfig{Sync: "sometimes"}}, "stream.sync", "positive Go duration"},
		{node.Config{Stream: node.StreamConfig{Sync: "0s"}}, "stream.sync", "positive Go duration"},
		{node.Config{Stream: node.StreamConfig{Type: "nats", URLs: []string{"nats://h:4222"}, Sync: "always"}}, "stream.sync", "sync_interval: always"},
		{node.Config{Stream: node.StreamConfig{Sync: "always", Leaf: node.LeafConfig{URLs: []string{"nats://h:7422"}}}}, "stream.sync", "a leaf's broker runs no JetStream"},
		{node.Config{Stream: node.StreamConfig{LogMaxBytes: map[string]int64{"stream.pages_log_max_bytes": -1}}}, "stream.pages_log_max_bytes", "negative"},
		{node.Config{Stream: node.StreamConfig{LogMaxBytes: map[string]int64{"stream.lunch_log_max_bytes": 1 << 30}}}, "stream.lunch_log_max_bytes", "names no log"},
		{node.Config{Stream: node.StreamConfig{Replicas: 3}}, "stream.replicas", "needs a cluster"},
		{node.Config{Stream: node.StreamConfig{Replicas: 6, Cluster: cluster}}, "stream.replicas", "1 to 5"},
		{node.Config{Stream: node.StreamConfig{Cluster: node.ClusterConfig{Listen: "127.0.0.1:6222"}}}, "stream.cluster.name", "required"},
		{node.Config{Stream: node.StreamConfig{Cluster: node.ClusterConfig{Name: "c"}}}, "stream.cluster.listen", "required"},
		{node.Config{Stream: node.StreamConfig{Cluster: node.ClusterConfig{Name: "c", Listen: "6222"}}}, "stream.cluster.listen", "not host:port"},
		{node.Config{Stream: node.StreamConfig{Cluster: node.ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Advertise: "h:99999"}}}, "stream.cluster.advertise", "no valid port"},
		{node.Config{Stream: node.StreamConfig{Cluster: node.ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"h:6223"}}}}, "stream.cluster.routes", "not nats://"},
		{node.Config{Stream: node.StreamConfig{Type: "nats", URLs: []string{"nats://h:4222"}, Cluster: cluster}}, "stream.cluster", "runs no broker"},
		{node.Config{Stream: node.StreamConfig{Type: "nats"}}, "stream.urls", "is required"},
		{node.Config{Stream: node.StreamConfig{URLs: []string{"nats://h:4222"}}}, "stream.urls", "only read with stream.type: nats"},
		{node.Config{Stream: node.StreamConfig{Client: node.ClientConfig{Listen: "0.0.0.0:4222"}}}, "stream.client.token", "can append to the logs"},
		{node.Config{Stream: node.StreamConfig{Client: node.ClientConfig{Listen: "0.0.0.0:4222", Token: "short"}}}, "stream.client.token", "16 characters"},
		{node.Config{Stream: node.StreamConfig{Client: node.ClientConfig{Token: "a-token-of-16-chars"}}}, "stream.client.token", "only read with stream.client.listen"},
		{node.Config{Stream: node.StreamConfig{Type: "nats", URLs: []string{"nats://h:4222"}, Client: node.ClientConfig{Listen: "0.0.0.0:4222", Token: "a-token-of-16-chars"}}}, "stream.client.listen", "runs no broker"},
		{node.Config{Stream: node.StreamConfig{Leaf: node.LeafConfig{URLs: []string{"nats://h:7422"}}}}, "stream.leaf.urls", "not supported"},
		{node.Config{Store: node.StoreConfig{BusyTimeoutSeconds: -1}}, "store.busy_timeout_seconds", "positive"},
	}
	for _, r := range refused {
		err := r.cfg.Validate()
		var ce *engine.ConfigError
		if !errors.As(err, &ce) || ce.Field != r.field || !strings.Contains(ce.Error(), r.reason) {
			t.Errorf("%+v: got %v, want %s refused with %q", r.cfg, err, r.field, r.reason)
		}
	}
}

// TestOpenValidates: Open refuses what Validate refuses before it makes
// anything on disk.
func TestOpenValidates(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, err := node.Open(context.Background(), node.Config{DataDir: dir, Mode: "frozen"})
	var ce *engine.ConfigError
	if !errors.As(err, &ce) || ce.Field != "node.mode" {
		t.Fatalf("Open with node.mode frozen: %v, want a ConfigError on node.mode", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Open refused the config but made the data directory: %v", err)
	}
}

// TestUnchecked: what a config cannot tell by itself is said per topology.
func TestUnchecked(t *testing.T) {
	ext := strings.Join(node.Config{Stream: node.StreamConfig{Type: "nats", URLs: []string{"nats://h:4222"}}}.Unchecked(), "\n")
	if !strings.Contains(ext, "sync_interval") || strings.Contains(ext, "stream.store_dir") {
		t.Errorf("stream.type nats: %s", ext)
	}
	emb := strings.Join(node.Config{Stream: node.StreamConfig{Cluster: node.ClusterConfig{Name: "c", Listen: ":6222"}}}.Unchecked(), "\n")
	for _, want := range []string{"stream.store_dir", "stream.cluster.routes", "node.name is unique"} {
		if !strings.Contains(emb, want) {
			t.Errorf("clustered embedded lacks %q: %s", want, emb)
		}
	}
}
