package node

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crewlet/crewlet/engine"
)

// Validate checks every field of the node's Tier A blocks (node.*,
// stream.*, store.*) that can be checked without a broker or a disk, and
// answers the first one that cannot be used as an *engine.ConfigError
// naming it. Zero fields are unset and valid: their defaults apply.
//
// Open calls it, so no caller can start a node on a config it refuses;
// `crewlet serve` and `crewlet validate` call it before anything starts,
// so a mistake is reported before a port is bound or a directory made.
func (c Config) Validate() error {
	switch c.Mode {
	case "", ModeNormal, ModeMaintenance, ModeSeal:
	default:
		return &engine.ConfigError{Field: "node.mode", Value: c.Mode, Reason: "is not one of normal, maintenance, seal"}
	}
	// The name becomes part of the durable consumers' names and of NATS
	// subjects, where these characters are separators or wildcards.
	if strings.ContainsAny(c.Name, " \t\r\n.*>/\\") {
		return &engine.ConfigError{Field: "node.name", Value: c.Name, Reason: "must not contain whitespace, '.', '*', '>', '/' or '\\' (it names the node's durable consumers)"}
	}
	if err := c.Stream.validate(); err != nil {
		return err
	}
	if err := c.validateCeilings(); err != nil {
		return err
	}
	if err := ParseTimezone(c.Company.Timezone); err != nil {
		return err
	}
	if err := c.Embedder.Validate(); err != nil {
		return err
	}
	if c.Store.BusyTimeoutSeconds < 0 {
		return &engine.ConfigError{Field: "store.busy_timeout_seconds", Value: strconv.Itoa(c.Store.BusyTimeoutSeconds), Reason: "must be a positive number of seconds"}
	}
	return nil
}

// validateCeilings refuses a log ceiling no domain of this node names.
func (c Config) validateCeilings() error {
	domains := c.Domains
	if domains == nil {
		domains = Builtin()
	}
	for field := range c.Stream.LogMaxBytes {
		known := false
		var keys []string
		for _, sp := range domains {
			known = known || sp.CeilingKey == field
			keys = append(keys, sp.CeilingKey)
		}
		if !known {
			return &engine.ConfigError{Field: field, Reason: "names no log of this node's domains; the log ceilings are " + strings.Join(keys, ", ")}
		}
	}
	return nil
}

// validate checks stream.*: the broker's kind and its sync, the byte
// ceilings, then the fleet's fields.
func (s StreamConfig) validate() error {
	switch s.Type {
	case "", "embedded", "nats":
	default:
		return &engine.ConfigError{Field: "stream.type", Value: s.Type, Reason: "is not one of embedded, nats"}
	}
	if s.Sync != "" {
		// stream.sync is the embedded broker's own file-store option: where
		// this node runs no JetStream of its own, it would promise
		// something nobody enforces.
		if len(s.Leaf.URLs) > 0 {
			return &engine.ConfigError{Field: "stream.sync", Value: s.Sync,
				Reason: "is refused on a leaf (stream.leaf.urls): a leaf's broker runs no JetStream and has no file store; the members it joins decide what an acknowledged write has reached, in their own stream.sync"}
		}
		if s.Type == "nats" {
			return &engine.ConfigError{Field: "stream.sync", Value: s.Sync,
				Reason: "is refused on stream.type: nats: it is a server option of a server this node does not run; ask the NATS operator for sync_interval: always instead"}
		}
		if err := validateSync(s.Sync); err != nil {
			return err
		}
	}
	sizes := map[string]int64{"stream.store_max_bytes": s.StoreMaxBytes}
	for field, n := range s.LogMaxBytes {
		sizes[field] = n
	}
	for field, n := range sizes {
		if n < 0 {
			return &engine.ConfigError{Field: field, Value: strconv.FormatInt(n, 10), Reason: "must not be negative (0 or unset: the default)"}
		}
	}
	return s.validateFleet()
}

func validateSync(s string) error {
	if s == "always" {
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return &engine.ConfigError{Field: "stream.sync", Value: s, Reason: "is neither always nor a positive Go duration such as 30s"}
	}
	return nil
}

// validateFleet checks the fleet's fields: the cluster block, the replica
// count, the external servers, the client port and the leaf block.
func (s StreamConfig) validateFleet() error {
	if s.Replicas < 0 || s.Replicas > 5 {
		return &engine.ConfigError{Field: "stream.replicas", Value: strconv.Itoa(s.Replicas), Reason: "must be 1 to 5 (3 is the clustered default)"}
	}
	cl := s.Cluster
	clustered := cl.Listen != "" || cl.Name != "" || len(cl.Routes) > 0
	if clustered {
		if s.Type == "nats" {
			return &engine.ConfigError{Field: "stream.cluster", Reason: "is refused on stream.type: nats: this node runs no broker to cluster; list the servers in stream.urls"}
		}
		if cl.Name == "" {
			return &engine.ConfigError{Field: "stream.cluster.name", Reason: "is required to cluster the embedded broker; give every node the same name"}
		}
		if cl.Listen == "" {
			return &engine.ConfigError{Field: "stream.cluster.listen", Reason: "is required to cluster the embedded broker (host:port of the route listener, e.g. 0.0.0.0:6222)"}
		}
		if err := engine.CheckListen("stream.cluster.listen", cl.Listen); err != nil {
			return err
		}
		if cl.Advertise != "" {
			if err := engine.CheckListen("stream.cluster.advertise", cl.Advertise); err != nil {
				return err
			}
		}
		for _, r := range cl.Routes {
			if err := CheckNATSURL("stream.cluster.routes", r); err != nil {
				return err
			}
		}
	} else if s.Replicas > 1 && s.Type != "nats" {
		return &engine.ConfigError{Field: "stream.replicas", Value: strconv.Itoa(s.Replicas), Reason: "needs a cluster: set stream.cluster.* (or stream.type: nats); one embedded broker holds one replica"}
	}
	if s.Type == "nats" {
		if len(s.URLs) == 0 {
			return &engine.ConfigError{Field: "stream.urls", Reason: "is required with stream.type: nats (nats://host:4222 of the servers)"}
		}
	} else if len(s.URLs) > 0 {
		return &engine.ConfigError{Field: "stream.urls", Reason: "is only read with stream.type: nats; the embedded broker needs no URL"}
	}
	for _, u := range s.URLs {
		if err := CheckNATSURL("stream.urls", u); err != nil {
			return err
		}
	}
	for _, u := range s.Leaf.URLs {
		if err := CheckNATSURL("stream.leaf.urls", u); err != nil {
			return err
		}
	}
	if err := s.validateClient(); err != nil {
		return err
	}
	if len(s.Leaf.URLs) > 0 {
		// The satellite topology is not built yet; refuse rather than run
		// a node that silently is not one.
		return &engine.ConfigError{Field: "stream.leaf.urls", Reason: "is not supported by this build yet; point the node at the members with stream.type: nats and stream.urls"}
	}
	return nil
}

// validateClient checks stream.client.*: a client port is opened only on
// an embedded broker, and never without a token, since whatever connects
// there can append to the logs.
func (s StreamConfig) validateClient() error {
	c := s.Client
	if c.Listen == "" {
		if c.Token != "" {
			return &engine.ConfigError{Field: "stream.client.token", Reason: "is only read with stream.client.listen"}
		}
		return nil
	}
	if s.Type == "nats" {
		return &engine.ConfigError{Field: "stream.client.listen", Value: c.Listen, Reason: "is refused on stream.type: nats: this node runs no broker; nodes without data join the external servers (crewlet mcp --join nats://…)"}
	}
	if err := engine.CheckListen("stream.client.listen", c.Listen); err != nil {
		return err
	}
	if c.Token == "" {
		return &engine.ConfigError{Field: "stream.client.token", Reason: "is required with stream.client.listen: whatever connects to the broker's client port can append to the logs; give every node the same token of 16 characters or more"}
	}
	if len(c.Token) < 16 || strings.ContainsAny(c.Token, " \t\r\n") {
		return &engine.ConfigError{Field: "stream.client.token", Reason: "must be 16 characters or more, without whitespace"}
	}
	return nil
}

// CheckNATSURL checks a broker URL given as field (stream.urls,
// stream.cluster.routes, the --join flag, …): nats:// or tls:// with a
// host. Credentials in it are the server's to judge.
func CheckNATSURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return &engine.ConfigError{Field: field, Value: raw, Reason: "is not nats://host:port"}
	}
	return nil
}

// Unchecked says, in words for the operator, what Validate cannot tell
// from the values alone: what only the brokers, the disk or the rest of
// the fleet know (`crewlet validate` prints it).
func (c Config) Unchecked() []string {
	var out []string
	if c.Stream.Type == "nats" {
		out = append(out,
			"the external NATS servers' sync_interval (ask their operator for sync_interval: always)",
			"the NATS account's JetStream limit, which the log ceilings are reserved against")
	} else {
		out = append(out, "whether the broker can reserve every log's ceiling: that is measured against stream.store_max_bytes or the free space on stream.store_dir when the node boots")
	}
	if c.Stream.Cluster.Listen != "" {
		out = append(out, "that stream.cluster.routes reach the peers and that every peer uses the same stream.cluster.name")
	}
	if c.Retention.SnapshotDir != "" {
		out = append(out, "that retention.snapshot_dir is writable, on storage that outlives this node's own disk (it holds the backups the trim's backup gate counts)")
	}
	return append(out, "that node.name is unique in the fleet")
}
