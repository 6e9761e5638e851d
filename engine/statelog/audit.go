package statelog

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
)

// The audit trail is derived from the log itself: the operator's gestures
// (a purge, an eviction, a readmission) are records, and every node's
// applier writes a row for each one it applies, in the transaction that
// applies it. So the trail is replicated like the rows it explains (every
// node holds the same one), survives a restart, travels inside a snapshot
// with the database, and cannot disagree with what the gestures did: a
// gesture a gate dropped applied nowhere and has no row.
const auditSchema = `
CREATE TABLE IF NOT EXISTS statelog_audit (
	domain     TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	generation INTEGER NOT NULL,
	kind       TEXT NOT NULL,
	op_id      TEXT NOT NULL,
	subject    TEXT NOT NULL,
	object     TEXT NOT NULL,
	writer     TEXT NOT NULL,
	by         TEXT NOT NULL,
	at         INTEGER NOT NULL,
	PRIMARY KEY (domain, seq)
) WITHOUT ROWID;
`

// AuditedDomain is a domain whose records of some kinds are operator
// gestures the audit trail lists (a purge).
type AuditedDomain interface {
	Audited() []string
}

// audited says rec's kind is on the trail: every framework record (a node
// gate, a capacity change) and the domain's audited kinds (a purge).
func (r *Replica) audited(kind string) bool {
	if isFramework(kind) {
		return true
	}
	if ad, ok := r.cfg.Domain.(AuditedDomain); ok {
		for _, k := range ad.Audited() {
			if k == kind {
				return true
			}
		}
	}
	return false
}

// audit writes rec's row of the trail inside the apply transaction, when
// its kind is one the trail lists. The instant is the record's own on the
// log, so every node writes the same row.
func (r *Replica) audit(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64, at time.Time) error {
	if !r.audited(rec.Kind) {
		return nil
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO statelog_audit(domain, seq, generation, kind, op_id, subject, object, writer, by, at)
		VALUES(?,?,?,?,?,?,?,?,?,?) ON CONFLICT DO NOTHING`,
		string(r.domain), seq, rec.Generation, rec.Kind, rec.OpID, rec.Subject, auditWhat(rec), rec.Writer, rec.By, at.UnixNano())
	return err
}

// auditWhat names what a gesture did: the operation's <verb>-<object>
// (purge-ENG-8), except a node gate's, whose step ids name the log they
// were written on: that one names the node (evict-n3); and a capacity
// change's, which names the ceilings it moved between.
func auditWhat(rec *record.Record) string {
	if isNodeGate(rec.Kind) {
		var p nodeGatePayload
		if json.Unmarshal(rec.Payload, &p) == nil && p.Node != "" {
			verb := "readmit"
			if rec.Kind == KindEvict {
				verb = "evict"
			}
			return verb + "-" + p.Node
		}
	}
	if rec.Kind == KindCapacity {
		var p capacityPayload
		if json.Unmarshal(rec.Payload, &p) == nil {
			return fmt.Sprintf("set_capacity-%s from %d to %d bytes", p.Stream, p.Before, p.MaxBytes)
		}
	}
	return objectOf(rec.OpID)
}

// AuditEntry is one gesture on the trail.
type AuditEntry struct {
	// At is the record's instant on the log.
	At     time.Time     `json:"at"`
	Domain engine.Domain `json:"domain"`
	// Kind is the record's kind (tracker.purge_work_item, statelog.evict…).
	Kind string `json:"kind"`
	// What is the operation's <verb>-<object> (purge-ENG-8, evict-n3).
	What string `json:"what"`
	// By is who asked: "operator" (the operator token) or "seat:<seat>";
	// empty for a record written by a build that did not say.
	By string `json:"by"`
	// Writer is the node that published the record.
	Writer   string          `json:"writer"`
	OpID     string          `json:"op_id"`
	Position engine.Position `json:"position"`
}

// ListAudit reads the trail from the replicated database q, newest first, at most limit entries;
// stream names each domain's stream for the positions.
func ListAudit(ctx context.Context, q *sql.DB, stream map[engine.Domain]string, limit int) ([]AuditEntry, error) {
	rows, err := q.QueryContext(ctx, `SELECT domain, seq, generation, kind, op_id, object, writer, by, at FROM statelog_audit ORDER BY at DESC, domain, seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []AuditEntry{}
	for rows.Next() {
		var e AuditEntry
		var d string
		var at int64
		if err := rows.Scan(&d, &e.Position.Seq, &e.Position.Generation, &e.Kind, &e.OpID, &e.What, &e.Writer, &e.By, &at); err != nil {
			return nil, err
		}
		e.Domain, e.At, e.Position.Stream = engine.Domain(d), time.Unix(0, at).UTC(), stream[engine.Domain(d)]
		out = append(out, e)
	}
	return out, rows.Err()
}
