// Package broker is Crewlet's side of NATS JetStream: the embedded
// nats-server (file store, sync as stream.sync says, read back at boot),
// the domain streams (created when missing with the ceilings the node
// sized, never rewritten at boot — only crewlet retention set-capacity
// changes a ceiling — checked for the default persist mode), what the
// broker can grant them and the volume's room, and the statelog.Log each
// domain publishes to (concurrent appends on a one-replica stream combined
// into atomic batches, combine.go; an append held to another subject's
// last record, a creation mark's, marks.go) and reads from through a durable
// consumer named after the node: on a fleet of embedded brokers one
// replica on the node's own broker server (place.go), otherwise a group
// whose lead the node keeps on its own server (lead.go). A request that may go unanswered (sent while a
// stream or consumer elects a leader) is one round of RequestWait, asked
// again within the caller's context (Settle); one that changes the stream
// is read back before it is sent again, since its lost answer may hide
// that it landed.
package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
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
	// MaxStore is stream.store_max_bytes (0: three quarters of the free
	// space on StoreDir's volume, counting what the store already holds,
	// measured once here).
	MaxStore int64
	Logger   *slog.Logger
	// ClientURL, when set, makes the broker listen for clients on a
	// loopback port and the node connect over TCP to the URL it returns
	// for the broker's own (a test puts a fault-injecting proxy there).
	ClientURL func(brokerURL string) string
	// Cluster, when set, joins this broker to a NATS cluster of embedded
	// brokers (stream.cluster.*); nil runs it alone.
	Cluster *ClusterOptions
	// Client, when set, opens the broker's client port to the network
	// (stream.client.*) for nodes without the data role.
	Client *ClientOptions
}

// ClientOptions is stream.client.*: the client listener nodes without
// the data role connect to, and the token every client must present
// (this node's own connection included). A client port reaches the logs
// themselves, so it is never opened without a token.
type ClientOptions struct {
	Listen string
	Token  string
}

func (c *ClientOptions) apply(opts *server.Options) error {
	if c.Token == "" {
		return errors.New("broker: stream.client.token is required with stream.client.listen: whatever connects to the client port can append to the logs")
	}
	host, port, err := hostPort("stream.client.listen", c.Listen, true)
	if err != nil {
		return err
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	opts.DontListen, opts.Host, opts.Port = false, host, port
	opts.Authorization = c.Token
	return nil
}

// hostPort reads a listener's host:port, naming its field when it cannot;
// port 0 (any free one) only where anyPort.
func hostPort(field, addr string, anyPort bool) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("broker: %s %q is not host:port", field, addr)
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 || port == 0 && !anyPort {
		return "", 0, fmt.Errorf("broker: %s %q has no valid port", field, addr)
	}
	return host, port, nil
}

// ClusterOptions is stream.cluster.*: the route listener, the peers'
// route URLs and the cluster's name. Clients never connect over TCP: each
// node reaches its own broker in process (the client port is a random
// loopback one), so only the route port serves the network.
type ClusterOptions struct {
	Name string
	// Listen is host:port of this broker's route listener.
	Listen string
	// Routes are the peers' route URLs (nats://host:port); this broker's
	// own URL may be among them.
	Routes []string
	// Advertise, when set, is the route address this broker gossips to
	// peers instead of its listener. The fault harness sets it to a dead
	// address so gossip cannot re-create a route around a cut proxy.
	Advertise string
}

// serverOptions maps the cluster block onto nats-server's options.
func (c *ClusterOptions) apply(opts *server.Options) error {
	if c.Name == "" {
		return errors.New("broker: stream.cluster.name is required to cluster the embedded broker")
	}
	host, port, err := hostPort("stream.cluster.listen", c.Listen, false)
	if err != nil {
		return err
	}
	// nats-server starts routing only once its client listener is open
	// (StartRouting waits on it), so a clustered broker cannot keep
	// DontListen: it listens for clients on a random loopback port that
	// nothing is told about.
	opts.DontListen = false
	opts.Host = "127.0.0.1"
	opts.Port = server.RANDOM_PORT
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port, Advertise: c.Advertise,
		ConnectRetries: -1}
	for _, r := range c.Routes {
		u, err := url.Parse(r)
		if err != nil || u.Scheme != "nats" || u.Host == "" {
			return fmt.Errorf("broker: stream.cluster.routes entry %q is not nats://host:port", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// Embedded is an in-process nats-server with JetStream, and this node's
// in-process connection to it.
type Embedded struct {
	Server *server.Server
	Conn   *nats.Conn
	JS     jetstream.JetStream
	// clientOpen says stream.client.listen opened the client port.
	clientOpen bool
	// storeDir and maxStoreSet say what sets the broker's storage limit
	// (Grant): stream.store_max_bytes where set, else StoreDir's volume.
	storeDir    string
	maxStoreSet bool
}

// StartEmbedded starts the broker, waits until it is ready, and reads its
// JetStream config back: a broker syncing otherwise than stream.sync says
// is refused, because every acknowledgement would promise the wrong thing.
func StartEmbedded(o EmbeddedOptions) (*Embedded, error) {
	maxStore := o.MaxStore
	if maxStore <= 0 {
		// nats-server's own default is three quarters of the volume's free
		// space without what the store holds, so a restart with full logs
		// would measure less room than its first boot did.
		v, err := volumeLimit(o.StoreDir)
		if err != nil {
			return nil, fmt.Errorf("broker: stream.store_max_bytes is unset and the free space on the volume holding stream.store_dir (%s) cannot be read (%v); set stream.store_max_bytes", o.StoreDir, err)
		}
		maxStore = v
	}
	opts := &server.Options{
		ServerName:         o.ServerName,
		DontListen:         true,
		JetStream:          true,
		StoreDir:           o.StoreDir,
		SyncAlways:         o.Sync.Always,
		SyncInterval:       o.Sync.Interval,
		JetStreamMaxStore:  maxStore,
		JetStreamMaxMemory: 64 << 20,
		NoSigs:             true,
	}
	if o.ClientURL != nil {
		opts.DontListen, opts.Host, opts.Port = false, "127.0.0.1", server.RANDOM_PORT
	}
	if o.Cluster != nil {
		if err := o.Cluster.apply(opts); err != nil {
			return nil, err
		}
	}
	if o.Client != nil {
		if err := o.Client.apply(opts); err != nil {
			return nil, err
		}
	}
	ns, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("broker: %w", err)
	}
	logger := newSlogLogger(o.Logger)
	ns.SetLoggerV2(logger, false, false, false)
	ns.Start()
	if err := waitReady(ns, logger); err != nil {
		ns.Shutdown()
		return nil, err
	}
	if err := CheckSync(ns, o.Sync); err != nil {
		ns.Shutdown()
		return nil, err
	}
	connect := []nats.Option{nats.Name(o.ServerName), nats.MaxReconnects(-1), nats.ReconnectWait(50 * time.Millisecond), AsyncErrors(o.Logger)}
	if o.Client != nil {
		connect = append(connect, nats.Token(o.Client.Token))
	}
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
	return &Embedded{Server: ns, Conn: nc, JS: js, clientOpen: o.Client != nil, storeDir: o.StoreDir, maxStoreSet: o.MaxStore > 0}, nil
}

// ClientURL is the URL nodes without data connect to: the client
// listener's, empty when the broker has no open client port.
func (e *Embedded) ClientURL() string {
	if e.Server == nil || !e.clientOpen {
		return ""
	}
	return e.Server.ClientURL()
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

// waitReady waits up to readyWait for the server to take connections,
// refusing at once where it logged a fatal line: nats-server logs a route
// listener it could not open and runs on without one, and its peers would
// wait out the cluster wait for a cluster that never forms.
func waitReady(ns *server.Server, logger *slogLogger) error {
	deadline := time.Now().Add(readyWait)
	for {
		ready := ns.ReadyForConnections(50 * time.Millisecond)
		if f := logger.fatalLine(); f != "" {
			hint := ""
			if strings.Contains(f, "listening on") {
				hint = "; free the port, or set stream.cluster.listen (routes) or stream.client.listen (clients) to another"
			}
			return fmt.Errorf("broker: the embedded nats-server cannot run as configured: %s%s", f, hint)
		}
		if ready {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("broker: the embedded nats-server did not become ready in %v", readyWait)
		}
	}
}

// readyWait bounds how long a boot waits for the embedded server to take
// connections: a restart recovers its JetStream stores first, which on a
// loaded machine took past the 30 s this once was.
const readyWait = 2 * time.Minute

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
