package statelog

import (
	"time"

	"github.com/crewlet/crewlet/engine"
	logcap "github.com/crewlet/crewlet/engine/capacity"
)

// Spec is one domain as the node runs it: everything outside its Apply
// that the framework, the broker and the node need to know. Each domain
// package exports its own; the framework names no domain.
type Spec struct {
	// Domain applies the domain's records (its name, schema, gates and
	// derived columns ride on it).
	Domain Domain
	// Stream is the domain's stream, a name the contract fixes
	// (CREWLET_TRACKER_LOG, ...). It takes SubjectPrefix(name)+">".
	Stream string
	// Compacted says the stream keeps one message per subject, for at
	// most MaxAge (0: for ever): a keyed table rather than a log.
	Compacted bool
	MaxAge    time.Duration
	// CeilingKey is the Tier A field that sets the log's byte ceiling
	// (stream.tracker_log_max_bytes, ...); Ask how the log asks for one
	// when the field is unset, which the node's capacity sizing fits
	// into the broker together with every other log's.
	CeilingKey string
	Ask        logcap.Ask
	// GateReserve keeps a sixteenth of the ceiling for gate records:
	// ordinary appends (writes, barriers) stop short of it, so an
	// eviction can still be written to a full log.
	GateReserve bool
	// Estate says the domain's standing decides whether this node serves
	// the estate: a copy out of service takes the node out.
	Estate bool
	// Service builds the domain's service (what its tools and routes
	// call) over the domain's view of its replica.
	Service func(r DomainReplica, clock engine.Clock) any
}

// Name is the domain's name.
func (s Spec) Name() engine.Domain { return s.Domain.Name() }

// Subjects are the stream's subjects: the domain's subject tree.
func (s Spec) Subjects() []string { return []string{SubjectPrefix(s.Name()) + ">"} }

// Ordinary is the ceiling ordinary appends are held to under the
// broker's ceiling max: a sixteenth short of it where the domain keeps
// the gate reserve, all of it otherwise.
func (s Spec) Ordinary(max int64) int64 { return OrdinaryCeiling(s.GateReserve, max) }
