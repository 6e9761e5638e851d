package httpedge_test

import (
	"errors"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/internal/httpedge"
)

// TestConfigValidate: each http.* rule refuses by its field; unset is
// valid. (cmd/crewlet's TestParseConfig drives the same rules from YAML.)
func TestConfigValidate(t *testing.T) {
	valid := []httpedge.Config{
		{},
		{Listen: "0.0.0.0:7420", AllowedHosts: []string{"crewlet.example.com", "proxy.example.net:8443", "[::1]:9000", "10.0.0.1"},
			MaxBodyBytes: 8 << 20, MaxConnections: 512},
		{Listen: "127.0.0.1:0"},
	}
	for _, c := range valid {
		if err := c.Validate(); err != nil {
			t.Errorf("%+v: %v", c, err)
		}
	}
	refused := []struct {
		cfg           httpedge.Config
		field, reason string
	}{
		{httpedge.Config{Listen: "localhost"}, "http.listen", "not host:port"},
		{httpedge.Config{Listen: "localhost:99999"}, "http.listen", "no valid port"},
		{httpedge.Config{AllowedHosts: []string{""}}, "http.allowed_hosts", "empty entry"},
		{httpedge.Config{AllowedHosts: []string{"https://crewlet.example.com"}}, "http.allowed_hosts", "no scheme"},
		{httpedge.Config{AllowedHosts: []string{"*.example.com"}}, "http.allowed_hosts", "wildcard"},
		{httpedge.Config{AllowedHosts: []string{"crewlet.example.com/mcp"}}, "http.allowed_hosts", "path"},
		{httpedge.Config{AllowedHosts: []string{"crewlet.example.com:99999"}}, "http.allowed_hosts", "no valid port"},
		{httpedge.Config{AllowedHosts: []string{"crewlet.example.com:"}}, "http.allowed_hosts", "no valid port"},
		{httpedge.Config{AllowedHosts: []string{"[]:80"}}, "http.allowed_hosts", "names no host"},
		{httpedge.Config{MaxBodyBytes: -1}, "http.max_body_bytes", "negative"},
		{httpedge.Config{MaxConnections: -5}, "http.max_connections", "positive"},
	}
	for _, r := range refused {
		err := r.cfg.Validate()
		var ce *engine.ConfigError
		if !errors.As(err, &ce) || ce.Field != r.field || !strings.Contains(ce.Error(), r.reason) {
			t.Errorf("%+v: got %v, want %s refused with %q", r.cfg, err, r.field, r.reason)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	if got := (httpedge.Config{}).WithDefaults(); got.Listen != httpedge.DefaultListen || got.MaxBodyBytes != 0 || got.MaxConnections != 0 {
		t.Errorf("defaults: %+v (the bounds stay unset for FitConnections and Limits)", got)
	}
	if got := (httpedge.Config{Listen: "0.0.0.0:80"}).WithDefaults(); got.Listen != "0.0.0.0:80" {
		t.Errorf("a set listen changed: %+v", got)
	}
	if u := (httpedge.Config{}).Unchecked(); len(u) != 0 {
		t.Errorf("unset max_connections: %q", u)
	}
	if u := (httpedge.Config{MaxConnections: 10}).Unchecked(); len(u) != 1 || !strings.Contains(u[0], "open-file limit") {
		t.Errorf("max_connections set: %q", u)
	}
}

// TestHosts: the bound address's names (the bare host where clients
// leave the port out, the host name on a wildcard bind), then
// http.allowed_hosts.
func TestHosts(t *testing.T) {
	tests := []struct {
		addr    net.Addr
		allowed []string
		want    []string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}, nil, []string{"127.0.0.1:7420"}},
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 80}, nil, []string{"10.1.2.3:80", "10.1.2.3"}},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 443}, nil, []string{"[::1]:443", "[::1]"}},
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 7420}, []string{"crewlet.example.com"}, []string{"127.0.0.1:7420", "crewlet.example.com"}},
	}
	for _, tt := range tests {
		if got := (httpedge.Config{AllowedHosts: tt.allowed}).Hosts(tt.addr); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Hosts(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
	if h, err := os.Hostname(); err == nil {
		got := (httpedge.Config{}).Hosts(&net.TCPAddr{IP: net.IPv4zero, Port: 7420})
		if !slices.Contains(got, net.JoinHostPort(h, "7420")) {
			t.Errorf("wildcard bind: Hosts = %q, want the host name", got)
		}
	}
}
