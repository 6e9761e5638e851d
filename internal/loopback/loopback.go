// Package loopback hands out loopback TCP ports for brokers and servers a
// process starts and wires together itself (a bench fleet, a test
// cluster), from outside the kernel's ephemeral range.
//
// A port taken by listening on port 0 comes from the ephemeral range, the
// same range every outgoing connection on the machine takes its local
// port from. Between closing such a port and a child broker binding it, a
// connection of another process (a second test suite beside this one)
// can take it, and the fleet never forms: a route dialled there finds
// something else ("Unknown Protocol Operation"). A port below that range
// is handed to no connection, and to no listener on port 0.
package loopback

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// lowest is the lowest port handed out; below it sit well-known and
// registered services more often than not.
const lowest = 10000

var (
	mu    sync.Mutex
	given = map[int]bool{}
)

// Listen listens on a free loopback port outside the ephemeral range that
// no earlier call in this process returned.
func Listen() (net.Listener, error) {
	lo, hi := portRange()
	mu.Lock()
	defer mu.Unlock()
	var lastErr error
	for try := 0; try < 200; try++ {
		port := lo + rand.IntN(hi-lo+1)
		if given[port] {
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			lastErr = err
			continue
		}
		given[port] = true
		return ln, nil
	}
	return nil, fmt.Errorf("loopback: no free port between %d and %d: %w", lo, hi, lastErr)
}

// Ports returns n distinct ports Listen found free, closed again for the
// caller's brokers to bind.
func Ports(n int) ([]int, error) {
	var ports []int
	for i := 0; i < n; i++ {
		ln, err := Listen()
		if err != nil {
			return nil, err
		}
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
		ln.Close()
	}
	return ports, nil
}

// portRange is where ports are picked: below the ephemeral range where
// the kernel says where it starts (Linux), else below 32768, under every
// usual system's ephemeral range (Linux 32768, BSD and Windows 49152).
func portRange() (lo, hi int) {
	start := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if s, err := ephemeralStart(string(b)); err == nil {
			start = s
		}
	}
	if start-lowest < 1000 {
		// An ephemeral range reaching this low leaves nothing safe below
		// it: pick among the ports above 1024 and let the bind decide.
		return 1025, 65535
	}
	return lowest, start - 1
}

func ephemeralStart(s string) (int, error) {
	f := strings.Fields(s)
	if len(f) != 2 {
		return 0, errors.New("loopback: ip_local_port_range is not two numbers")
	}
	return strconv.Atoi(f[0])
}
