package main

import (
	"net/url"
	"strconv"
	"strings"
)

// validateFleet checks the fleet's fields: the cluster block, the replica
// count, the external servers and the leaf block.
func (c *Config) validateFleet() error {
	s := c.Stream
	if s.Replicas < 0 || s.Replicas > 5 {
		return &ConfigError{Field: "stream.replicas", Value: strconv.Itoa(s.Replicas), Reason: "must be 1 to 5 (3 is the clustered default)"}
	}
	cl := s.Cluster
	clustered := cl.Listen != "" || cl.Name != "" || len(cl.Routes) > 0
	if clustered {
		if s.Type == "nats" {
			return &ConfigError{Field: "stream.cluster", Reason: "is refused on stream.type: nats: this node runs no broker to cluster; list the servers in stream.urls"}
		}
		if cl.Name == "" {
			return &ConfigError{Field: "stream.cluster.name", Reason: "is required to cluster the embedded broker; give every node the same name"}
		}
		if cl.Listen == "" {
			return &ConfigError{Field: "stream.cluster.listen", Reason: "is required to cluster the embedded broker (host:port of the route listener, e.g. 0.0.0.0:6222)"}
		}
		if err := validateListen("stream.cluster.listen", cl.Listen); err != nil {
			return err
		}
		if cl.Advertise != "" {
			if err := validateListen("stream.cluster.advertise", cl.Advertise); err != nil {
				return err
			}
		}
		for _, r := range cl.Routes {
			if err := validateNATSURL("stream.cluster.routes", r); err != nil {
				return err
			}
		}
	} else if s.Replicas > 1 && s.Type != "nats" {
		return &ConfigError{Field: "stream.replicas", Value: strconv.Itoa(s.Replicas), Reason: "needs a cluster: set stream.cluster.* (or stream.type: nats); one embedded broker holds one replica"}
	}
	if s.Type == "nats" {
		if len(s.URLs) == 0 {
			return &ConfigError{Field: "stream.urls", Reason: "is required with stream.type: nats (nats://host:4222 of the servers)"}
		}
	} else if len(s.URLs) > 0 {
		return &ConfigError{Field: "stream.urls", Reason: "is only read with stream.type: nats; the embedded broker needs no URL"}
	}
	for _, u := range s.URLs {
		if err := validateNATSURL("stream.urls", u); err != nil {
			return err
		}
	}
	for _, u := range s.Leaf.URLs {
		if err := validateNATSURL("stream.leaf.urls", u); err != nil {
			return err
		}
	}
	if err := validateClient(s); err != nil {
		return err
	}
	if len(s.Leaf.URLs) > 0 {
		// The satellite topology is not built yet; refuse rather than run
		// a node that silently is not one.
		return &ConfigError{Field: "stream.leaf.urls", Reason: "is not supported by this build yet; point the node at the members with stream.type: nats and stream.urls"}
	}
	return nil
}

func validateNATSURL(field, raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "nats" && u.Scheme != "tls") || u.Host == "" {
		return &ConfigError{Field: field, Value: raw, Reason: "is not nats://host:port"}
	}
	return nil
}

// validateClient checks stream.client.*: a client port is opened only on
// an embedded broker, and never without a token, since whatever connects
// there can append to the logs.
func validateClient(s StreamSection) error {
	c := s.Client
	if c.Listen == "" {
		if c.Token != "" {
			return &ConfigError{Field: "stream.client.token", Reason: "is only read with stream.client.listen"}
		}
		return nil
	}
	if s.Type == "nats" {
		return &ConfigError{Field: "stream.client.listen", Value: c.Listen, Reason: "is refused on stream.type: nats: this node runs no broker; nodes without data join the external servers (crewlet mcp --join nats://…)"}
	}
	if err := validateListen("stream.client.listen", c.Listen); err != nil {
		return err
	}
	if c.Token == "" {
		return &ConfigError{Field: "stream.client.token", Reason: "is required with stream.client.listen: whatever connects to the broker's client port can append to the logs; give every node the same token of 16 characters or more"}
	}
	if len(c.Token) < 16 || strings.ContainsAny(c.Token, " \t\r\n") {
		return &ConfigError{Field: "stream.client.token", Reason: "must be 16 characters or more, without whitespace"}
	}
	return nil
}
