// Package broker is Crewlet's side of NATS JetStream: the embedded
// nats-server (file store, sync as stream.sync says, read back at boot),
// the domain streams (created when missing, never rewritten, checked for
// the default persist mode) and the statelog.Log each domain publishes to
// and reads from through a durable consumer named after the node.
package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sync is stream.sync parsed: always, or a sync interval.
type Sync struct {
	Always   bool
	Interval time.Duration
}

// ParseSync reads stream.sync: "always" (the default, also for "") or a Go
// duration such as "30s".
func ParseSync(s string) (Sync, error) {
	if s == "" || s == "always" {
		return Sync{Always: true}, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return Sync{}, fmt.Errorf("stream.sync %q is neither \"always\" nor a positive duration such as \"30s\"", s)
	}
	return Sync{Interval: d}, nil
}

func (s Sync) String() string {
	if s.Always {
		return "always"
	}
	return s.Interval.String()
}

// EmbeddedOptions configures the in-process broker.
type EmbeddedOptions struct {
	ServerName string
	StoreDir   string
	Sync       Sync
	// MaxStore is stream.store_max_bytes (0: the server's own default).
	MaxStore int64
	Logger   *slog.Logger
	// ClientURL, when set, makes the broker listen for clients on a
	// loopback port and the node connect over TCP to the URL it returns
	// for the broker's own (a test puts a fault-injecting proxy there).
	ClientURL func(brokerURL string) string
}

// Embedded is an in-process nats-server with JetStream, and this node's
// in-process connection to it.
type Embedded struct {
	Server *server.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
}

// StartEmbedded starts the broker, waits until it is ready, and reads its
// JetStream config back: a broker syncing otherwise than stream.sync says
// is refused, because every acknowledgement would promise the wrong thing.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	opts := &server.Options{
		ServerName:         o.ServerName,
		DontListen:         true,
		JetStream:          true,
		StoreDir:           o.StoreDir,
		SyncAlways:         o.Sync.Always,
		SyncInterval:       o.Sync.Interval,
		JetStreamMaxStore:  o.MaxStore,
		JetStreamMaxMemory: 64 << 20,
		NoSigs:             true,
	}
	if o.ClientURL != nil {
		opts.DontListen, opts.Host, opts.Port = false, "127.0.0.1", server.RANDOM_PORT
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	if o.Logger != nil {
		ns.SetLoggerV2(newSlogLogger(o.Logger), false, false, false)
	}
	ns.Start()
	if !ns.ReadyForConnections(30 * time.Second) {
		ns.Shutdown()
		return nil, errors.New("broker: the embedded nats-server did not become ready in 30 s")
	}
	if err := CheckSync(ns, o.Sync); err != nil {
		ns.Shutdown()
		return nil, err
	}
	connect := []nats.Option{nats.Name(o.ServerName), nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond)}
	url := ""
	if o.ClientURL != nil {
		url = o.ClientURL(ns.ClientURL())
	} else {
		connect = append(connect, nats.InProcessServer(ns))
	}
	nc, err := nats.Connect(url, connect...)
	if err != nil {
		ns.Shutdown()
		return nil, fmt.Errorf("broker: connect in process: %w", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		ns.Shutdown()
		return nil, err
	}
	return &Embedded{Server: ns, Conn: nc, JS: js}, nil
}

// CheckSync reads the running broker's JetStream config and refuses one
// whose sync differs from what was asked.
func CheckSync(ns *server.Server, want Sync) error {
	cfg := ns.JetStreamConfig()
	if cfg == nil {
		return errors.New("broker: JetStream is not enabled on the embedded server")
	}
	got := Sync{Always: cfg.SyncAlways}
	if !cfg.SyncAlways {
		got.Interval = cfg.SyncInterval
	}
	if got.Always != want.Always || (!want.Always && got.Interval != want.Interval) {
		return fmt.Errorf("broker: stream.sync is %s but the running broker syncs %s; refusing to boot, because every acknowledged write would promise the wrong thing", want, got)
	}
	return nil
}

// Close drains the connection and shuts the server down.
func (e *Embedded) Close() {
	if e.Conn != nil {
		e.Conn.Close()
	}
	if e.Server != nil {
		e.Server.Shutdown()
		e.Server.WaitForShutdown()
	}
}

// ConsumerName turns a node name into a durable consumer name: the
// characters NATS forbids in one become '_'.
func ConsumerName(node string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.', '*', '>', ' ', '\t', '/', '\\':
			return '_'
		}
		return r
	}, node)
}
