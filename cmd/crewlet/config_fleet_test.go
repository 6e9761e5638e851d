package main

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/node"
)

func TestFleetConfig(t *testing.T) {
	c, err := ParseConfig(strings.NewReader(`
node: {name: n2}
stream:
  replicas: 3
  cluster:
    name: crew
    listen: 127.0.0.1:6222
    routes: [nats://127.0.0.1:6222, nats://127.0.0.1:6223, nats://127.0.0.1:6224]
`))
	if err != nil {
		t.Fatal(err)
	}
	got := c.NodeConfig("d").Stream
	want := node.StreamConfig{Replicas: 3, Cluster: node.ClusterConfig{Name: "crew", Listen: "127.0.0.1:6222",
		Routes: []string{"nats://127.0.0.1:6222", "nats://127.0.0.1:6223", "nats://127.0.0.1:6224"}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	ext, err := ParseConfig(strings.NewReader("stream: {type: nats, urls: [nats://10.0.0.1:4222, nats://10.0.0.2:4222]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if u := ext.NodeConfig("d").Stream.URLs; len(u) != 2 {
		t.Fatalf("urls = %v", u)
	}
	cl, err := ParseConfig(strings.NewReader("stream: {client: {listen: 0.0.0.0:4222, token: a-token-of-16-chars}}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := cl.NodeConfig("d").Stream.Client; got != (node.ClientConfig{Listen: "0.0.0.0:4222", Token: "a-token-of-16-chars"}) {
		t.Fatalf("stream.client = %+v", got)
	}

	refused := []struct{ yaml, field, reason string }{
		{"stream: {type: nats, urls: [nats://h:4222], sync: always}\n", "stream.sync", "ask the NATS operator for sync_interval: always"},
		{"stream: {sync: always, leaf: {urls: [nats://h:7422]}}\n", "stream.sync", "a leaf's broker runs no JetStream"},
		{"stream: {type: nats}\n", "stream.urls", "is required"},
		{"stream: {urls: [nats://h:4222]}\n", "stream.urls", "only read with stream.type: nats"},
		{"stream: {type: nats, urls: [http://h:4222]}\n", "stream.urls", "not nats://host:port"},
		{"stream: {cluster: {listen: 127.0.0.1:6222}}\n", "stream.cluster.name", "required"},
		{"stream: {cluster: {name: c}}\n", "stream.cluster.listen", "required"},
		{"stream: {cluster: {name: c, listen: 127.0.0.1:6222, routes: [127.0.0.1:6223]}}\n", "stream.cluster.routes", "not nats://"},
		{"stream: {replicas: 3}\n", "stream.replicas", "needs a cluster"},
		{"stream: {replicas: 7, cluster: {name: c, listen: 127.0.0.1:6222}}\n", "stream.replicas", "1 to 5"},
		{"stream: {type: nats, urls: [nats://h:4222], cluster: {name: c, listen: 127.0.0.1:6222}}\n", "stream.cluster", "runs no broker"},
		{"stream: {cluster: {name: c, listen: 127.0.0.1:6222, seeds: []}}\n", "stream.cluster.seeds", "not a Tier A field"},
		{"stream: {client: {listen: 0.0.0.0:4222}}\n", "stream.client.token", "can append to the logs"},
		{"stream: {client: {listen: 0.0.0.0:4222, token: short}}\n", "stream.client.token", "16 characters"},
		{"stream: {client: {token: a-token-of-16-chars}}\n", "stream.client.token", "only read with stream.client.listen"},
		{"stream: {client: {listen: nowhere, token: a-token-of-16-chars}}\n", "stream.client.listen", "not host:port"},
		{"stream: {type: nats, urls: [nats://h:4222], client: {listen: 0.0.0.0:4222, token: a-token-of-16-chars}}\n", "stream.client.listen", "runs no broker"},
	}
	for _, r := range refused {
		_, err := ParseConfig(strings.NewReader(r.yaml))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != r.field || !strings.Contains(ce.Error(), r.reason) {
			t.Errorf("%q: got %v, want %s refused with %q", r.yaml, err, r.field, r.reason)
		}
	}
}

func TestValidateSaysWhatItCannotCheck(t *testing.T) {
	got := strings.Join(cannotCheck(Config{Stream: StreamSection{Type: "nats", URLs: []string{"nats://h:4222"}}}), "\n")
	if !strings.Contains(got, "sync_interval") {
		t.Fatalf("validate of stream.type nats does not say it cannot check the servers' sync: %s", got)
	}
}
