package engine

import (
	"fmt"
	"net"
	"strconv"
)

// ConfigError is a Tier A field (of the config file or a flag) that cannot
// be used. Every package that checks a field it owns answers this one
// type, so `crewlet validate` and `crewlet serve` report any field the
// same way, by its dotted name.
type ConfigError struct {
	Field  string // the Tier A name, e.g. stream.sync
	Value  string // the value given, as written; empty when not worth echoing (a token)
	Reason string // what is wrong and what would be accepted
}

func (e *ConfigError) Error() string {
	if e.Value == "" {
		return fmt.Sprintf("config: %s: %s", e.Field, e.Reason)
	}
	return fmt.Sprintf("config: %s: %q %s", e.Field, e.Value, e.Reason)
}

// CheckListen checks a listen address field (http.listen,
// stream.cluster.listen, …): host:port with a port from 0 (any) to 65535.
// The host may be empty (every interface) and is not resolved: a name
// that does not resolve is for the listener to refuse.
func CheckListen(field, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return &ConfigError{Field: field, Value: addr, Reason: "is not host:port (for example 127.0.0.1:7420)"}
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return &ConfigError{Field: field, Value: addr, Reason: "has no valid port"}
	}
	return nil
}
