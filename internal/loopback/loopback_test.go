package loopback

import (
	"net"
	"strconv"
	"testing"
)

// TestPortsOutsideTheEphemeralRange: every port handed out lies below the
// range listening on port 0 draws from, is distinct, and is free to bind.
func TestPortsOutsideTheEphemeralRange(t *testing.T) {
	lo, hi := portRange()
	ports, err := Ports(20)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, p := range ports {
		if p < lo || p > hi || seen[p] {
			t.Fatalf("port %d: outside %d-%d, or handed out twice (%v)", p, lo, hi, ports)
		}
		seen[p] = true
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p)))
		if err != nil {
			t.Fatalf("port %d was handed out but does not bind: %v", p, err)
		}
		ln.Close()
	}
	eph, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer eph.Close()
	if p := eph.Addr().(*net.TCPAddr).Port; p >= lo && p <= hi {
		t.Fatalf("a listen on port 0 drew %d, inside the range handed out (%d-%d)", p, lo, hi)
	}
}

func TestEphemeralStart(t *testing.T) {
	if s, err := ephemeralStart("32768\t60999\n"); err != nil || s != 32768 {
		t.Fatalf("%d %v", s, err)
	}
	if _, err := ephemeralStart("garbage"); err == nil {
		t.Fatal("garbage parsed")
	}
}
