package broker_test

import (
	"net"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/broker"
)

// TestRoutePortTakenRefusesTheBoot: a clustered broker whose route port
// another process holds refuses to start, naming the port, instead of
// running on without a route listener (nats-server only logs that) while
// its peers wait out the cluster wait for it.
func TestRoutePortTakenRefusesTheBoot(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	br, err := broker.StartEmbedded(broker.EmbeddedOptions{ServerName: "n1", StoreDir: t.TempDir(),
		Cluster: &broker.ClusterOptions{Name: "taken", Listen: addr, Routes: []string{"nats://127.0.0.1:1"}}})
	if err == nil {
		br.Close()
		t.Fatal("a broker started on a route port another listener holds")
	}
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "stream.cluster.listen") {
		t.Fatalf("the refusal does not name the port and the setting: %v", err)
	}
}
