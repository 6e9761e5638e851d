package httpedge

import (
	"net"
	"os"
	"strconv"
	"strings"

	"github.com/crewlet/crewlet/engine"
)

// DefaultListen is where a node's HTTP surfaces listen unless http.listen
// (or crewlet serve --http) says otherwise: loopback only, so nothing is
// reachable from the network until the operator asks.
const DefaultListen = "127.0.0.1:7420"

// Config is the http.* block of Tier A: where the node's HTTP surfaces
// listen, the names they are reached by, and the edge's bounds. Zero
// fields are unset.
type Config struct {
	// Listen is http.listen (default DefaultListen).
	Listen string
	// AllowedHosts is http.allowed_hosts: the Host (and Origin) names the
	// node is reached by besides its listen address and loopback, host or
	// host:port, for a node behind a reverse proxy. Unset: none.
	AllowedHosts []string
	// MaxBodyBytes is http.max_body_bytes (default DefaultMaxBodyBytes).
	MaxBodyBytes int64
	// MaxConnections is http.max_connections (default
	// DefaultMaxConnections, fitted under the open-file limit by
	// FitConnections, which must tell a configured cap from the default).
	MaxConnections int
}

// Validate checks every http.* value and answers the first one that
// cannot be used as an *engine.ConfigError naming it.
func (c Config) Validate() error {
	if c.Listen != "" {
		if err := engine.CheckListen("http.listen", c.Listen); err != nil {
			return err
		}
	}
	for _, h := range c.AllowedHosts {
		if err := checkAllowedHost(h); err != nil {
			return err
		}
	}
	if c.MaxBodyBytes < 0 {
		return &engine.ConfigError{Field: "http.max_body_bytes", Value: strconv.FormatInt(c.MaxBodyBytes, 10), Reason: "must not be negative (unset: 4MiB)"}
	}
	if c.MaxConnections < 0 {
		return &engine.ConfigError{Field: "http.max_connections", Value: strconv.Itoa(c.MaxConnections), Reason: "must be a positive number of connections (unset: 1024)"}
	}
	return nil
}

// checkAllowedHost accepts a host name or address, with or without a
// port, as a Host header carries it: no scheme, path or wildcard, since
// the guard compares names exactly.
func checkAllowedHost(h string) error {
	const field = "http.allowed_hosts"
	if strings.TrimSpace(h) == "" {
		return &engine.ConfigError{Field: field, Value: h, Reason: "has an empty entry; list host names such as crewlet.example.com or crewlet.example.com:443"}
	}
	if strings.Contains(h, "://") || strings.ContainsAny(h, "/ \t*?#@") {
		return &engine.ConfigError{Field: field, Value: h, Reason: "is not a host or host:port as a Host header carries it (no scheme, path, space or wildcard); for https://crewlet.example.com/ write crewlet.example.com"}
	}
	host := h
	if hp, port, err := net.SplitHostPort(h); err == nil {
		if p, err := strconv.Atoi(port); err != nil || p <= 0 || p > 65535 {
			return &engine.ConfigError{Field: field, Value: h, Reason: "has no valid port"}
		}
		host = hp
	} else if strings.Count(h, ":") == 1 {
		return &engine.ConfigError{Field: field, Value: h, Reason: "is not host or host:port"}
	}
	if strings.Trim(host, "[]") == "" {
		return &engine.ConfigError{Field: field, Value: h, Reason: "names no host"}
	}
	return nil
}

// WithDefaults returns c with Listen set when unset. The bounds keep
// their zero: Limits.WithDefaults and FitConnections give them their
// defaults where they are applied.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultListen
	}
	return c
}

// Unchecked says what Validate cannot tell from the values alone (crewlet
// validate prints it).
func (c Config) Unchecked() []string {
	if c.MaxConnections > 0 {
		return []string{"that http.max_connections fits under the open-file limit of the process that serves it (crewlet serve checks it when it starts)"}
	}
	return nil
}

// Hosts is the Host allow-list of a server bound to bound, for the guard
// (GuardOptions.AllowedHosts): the names of the bound address, then
// http.allowed_hosts. Loopback names on the bound port are not listed:
// the guard always allows them.
func (c Config) Hosts(bound net.Addr) []string {
	return append(listenNames(bound), c.AllowedHosts...)
}

// listenNames are the Host header values a client uses for a server bound
// to addr: the bound address itself and, on a wildcard bind, this host's
// name. The bare host is added on port 80 or 443, where clients leave the
// port out.
func listenNames(addr net.Addr) []string {
	host, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return []string{addr.String()}
	}
	var names []string
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		if h, err := os.Hostname(); err == nil && h != "" {
			names = append(names, h)
		}
	} else if host != "" {
		names = append(names, host)
	}
	var out []string
	for _, n := range names {
		out = append(out, net.JoinHostPort(n, port))
		if port == "80" || port == "443" {
			if strings.Contains(n, ":") {
				n = "[" + n + "]"
			}
			out = append(out, n)
		}
	}
	return out
}
