// Package record is the wire format of every record on a domain's log: the
// envelope (kind, format version, op id, writer, generation, subject,
// declared scope) around a domain's payload, its encoding, and the error
// that says a record is one this build cannot decode and must defer.
package record

import (
	"encoding/json"
	"errors"
	"fmt"
)

// KindBarrier is the record a linearizable read appends. It stays at
// version 1 for good.
const KindBarrier = "barrier"

// Record is one entry of a domain's log.
type Record struct {
	// Kind names what the record does, e.g. "tracker.create_work_item".
	Kind string `json:"kind"`
	// Version is the lowest format version that can apply the record.
	Version int `json:"v"`
	// OpID is the operation id; the stream's Nats-Msg-Id carries it too.
	OpID string `json:"op,omitempty"`
	// Writer is the node that published the record; Generation the
	// generation it was decided in. The write path refuses a record
	// naming neither, because an eviction gate can never drop it.
	Writer     string `json:"writer"`
	Generation uint64 `json:"gen"`
	// Subject is the stream subject the record is arbitrated on.
	Subject string `json:"subject"`
	// Scope names every object the record may change, its own subject's
	// object included.
	Scope []string `json:"scope,omitempty"`
	// By is who asked for the write ("operator", "seat:<seat>"), where the
	// surface said: what the audit trail names. An older build ignores it.
	By string `json:"by,omitempty"`
	// Digest is the argument digest of the call that made the record, so
	// an op id brought back with other arguments is told apart even when
	// only the log holds its first copy.
	Digest string `json:"digest,omitempty"`
	// Payload is the domain's own body.
	Payload json.RawMessage `json:"payload,omitempty"`
}

// ErrUndecodable marks a record this build cannot decode: retain it, never
// drop it.
var ErrUndecodable = errors.New("record: undecodable by this build")

// UndecodableError says why a record could not be decoded, and carries
// whatever of its envelope could be read (its scope, for deferral).
type UndecodableError struct {
	Reason  string
	Version int
	// Kind is the record's kind where the envelope could be read that far
	// (a gate record a build cannot read stops its applier instead).
	Kind  string
	Scope []string
	// ScopeKnown is false when not even the envelope's scope could be read.
	ScopeKnown bool
}

func (e *UndecodableError) Error() string { return "record: undecodable: " + e.Reason }

// Unwrap makes errors.Is(err, ErrUndecodable) hold.
func (e *UndecodableError) Unwrap() error { return ErrUndecodable }

// Validate checks what the write path requires of every record it appends.
func (r *Record) Validate() error {
	switch {
	case r.Kind == "":
		return errors.New("record: no kind")
	case r.Writer == "":
		return errors.New("record: names no writer node; an eviction gate could never drop it")
	case r.Generation == 0:
		return errors.New("record: names no generation")
	case r.Subject == "":
		return errors.New("record: no subject")
	case r.Version < 1 || r.Version > FormatVersion:
		return fmt.Errorf("record: format version %d is not one this build writes", r.Version)
	}
	return nil
}

// Encode renders the record as it goes on the wire.
func Encode(r *Record) ([]byte, error) {
	if r.Version == 0 {
		r.Version = 1
	}
	return json.Marshal(r)
}

// Decode reads a record off the wire as this build does: DecodeUpTo
// FormatVersion.
func Decode(data []byte) (*Record, error) { return DecodeUpTo(data, FormatVersion) }

// DecodeUpTo reads a record off the wire as a build reading formats up to
// newest does. A record at a format version above newest, or one whose
// envelope does not parse, is an *UndecodableError carrying what of its
// kind and scope could be read. (A replica is told the newest format its
// build reads; tests play an older or a newer build with it.)
func DecodeUpTo(data []byte, newest int) (*Record, error) {
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		// Try the kind and the scope alone: a newer envelope may still
		// declare them.
		var partial struct {
			Kind    string   `json:"kind"`
			Version int      `json:"v"`
			Scope   []string `json:"scope"`
		}
		if json.Unmarshal(data, &partial) == nil {
			return nil, &UndecodableError{Reason: err.Error(), Version: partial.Version, Kind: partial.Kind, Scope: partial.Scope, ScopeKnown: partial.Scope != nil}
		}
		return nil, &UndecodableError{Reason: err.Error()}
	}
	if r.Version > newest {
		return nil, &UndecodableError{Reason: fmt.Sprintf("format version %d is newer than this build's %d", r.Version, newest), Version: r.Version, Kind: r.Kind, Scope: r.Scope, ScopeKnown: r.Scope != nil}
	}
	if r.Version < 1 || r.Kind == "" {
		return nil, &UndecodableError{Reason: "no kind or version", Version: r.Version, Kind: r.Kind, Scope: r.Scope, ScopeKnown: r.Scope != nil}
	}
	return &r, nil
}
