package statelog

import (
	"context"
	"database/sql"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
)

// KindCapacity is the framework's record of a change to its log's byte
// ceiling (crewlet retention set-capacity). The ceiling itself lives on
// the broker, which the change already set; the record is what puts the
// change on every node's audit trail, replicated like the purges and
// evictions beside it. It applies no rows but that audit row, which a
// build that predates the kind (format 2) would never write: so it is
// stamped 3 (frameworkKinds), and such a build retains it rather than
// leave its audit trail short of its peers'. Its scope is the log's
// capacity alone (CapacityScope), so what an older build holds back with
// it is the later capacity records and nothing else.
const KindCapacity = "statelog.capacity"

// CapacityScope is the scope a capacity record declares.
func CapacityScope(d engine.Domain) string { return "capacity:" + string(d) }

// CapacitySubject is the subject a log's capacity records are written on.
func CapacitySubject(d engine.Domain) string { return SubjectPrefix(d) + "gate.capacity" }

type capacityPayload struct {
	Stream   string `json:"stream"`
	Before   int64  `json:"max_bytes_before"`
	MaxBytes int64  `json:"max_bytes"`
}

// RecordCapacity appends the record of a ceiling change from before to
// maxBytes under op, through the write path (the actor in ctx is who
// asked).
func (r *Replica) RecordCapacity(ctx context.Context, op Op, before, maxBytes int64) (Written, error) {
	return r.Write(ctx, op, func(context.Context, *sql.Tx) (*Proposal, error) {
		return &Proposal{Kind: KindCapacity, Subject: CapacitySubject(r.domain), Scope: []string{CapacityScope(r.domain)}, Payload: capacityPayload{Stream: r.stream, Before: before, MaxBytes: maxBytes}}, nil
	})
}

// frameworkApply applies the framework's own records, which no domain
// knows: a node gate (on every log) and a capacity change (nothing to
// apply: the broker holds the ceiling, and the audit row is written for
// every audited kind alike). Every kind here is on the audit trail.
var frameworkApply = map[string]func(r *Replica, ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64) error{
	KindEvict:    applyGate,
	KindReadmit:  applyGate,
	KindCapacity: func(*Replica, context.Context, *sql.Tx, *record.Record, uint64) error { return nil },
	// KindGeneration is added by generations.go (init), which owns it.
}

func init() { frameworkApply[KindGeneration] = applyGeneration }

func applyGate(r *Replica, ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64) error {
	if _, err := r.applyNodeGate(ctx, tx, rec, seq); err != nil {
		return err
	}
	r.gateChanged.Store(true)
	return nil
}

// isFramework says a record is the framework's own rather than the
// domain's.
func isFramework(kind string) bool { _, ok := frameworkApply[kind]; return ok }
