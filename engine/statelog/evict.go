package statelog

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"sync/atomic"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
)

// The node gate: the framework's own records that evict a node from the
// fleet and readmit it, on every domain's log. They stay at format
// version 1 for good (a node that deferred an eviction would go on
// applying what the evicted node appends), and they may be appended into
// the last sixteenth of a log that ordinary appends are refused from.
const (
	KindEvict   = "statelog.evict"
	KindReadmit = "statelog.readmit"
	// GateEvicted is the eviction gate's word on statelog_record_gated.
	GateEvicted = "evicted"
)

// NodeGateSubject is the subject a domain's node-gate records go on.
func NodeGateSubject(d engine.Domain) string { return SubjectPrefix(d) + "gate.nodes" }

const evictionSchema = `
CREATE TABLE IF NOT EXISTS statelog_evictions (
	domain        TEXT NOT NULL,
	node          TEXT NOT NULL,
	evicted_at    INTEGER NOT NULL,
	readmitted_at INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (domain, node)
) WITHOUT ROWID;
`

type nodeGatePayload struct {
	Node string `json:"node"`
}

func isNodeGate(kind string) bool { return kind == KindEvict || kind == KindReadmit }

// evictionGate drops every record a node published after the record that
// evicted it, until a record readmits it. The eviction position is the
// eviction record's own place in the log, so every node learns of it at
// the same point of its apply and none has applied a later record of the
// evicted node before learning.
//
// The table holds no row of a domain until its first eviction, and then
// asking it for every record's writer was one statement in twelve of an
// apply: some says whether it may hold one (read at load and after each
// commit that applied a node gate, set at once when an eviction applies,
// never cleared by a batch that rolls back), and the gate asks the table
// only then.
type evictionGate struct {
	domain engine.Domain
	some   *atomic.Bool
}

func (evictionGate) Name() string { return GateEvicted }

func (g evictionGate) Holds(ctx context.Context, tx Reader, rec *record.Record, seq uint64) (bool, error) {
	if rec.Writer == "" || !g.some.Load() {
		return false, nil
	}
	var evicted, readmitted uint64
	err := tx.QueryRowContext(ctx, `SELECT evicted_at, readmitted_at FROM statelog_evictions WHERE domain = ? AND node = ?`,
		string(g.domain), rec.Writer).Scan(&evicted, &readmitted)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return evicted > 0 && seq > evicted && readmitted < evicted, nil
}

// applyNodeGate records an eviction or a readmission in the apply
// transaction; it reports whether it was about this node.
func (r *Replica) applyNodeGate(ctx context.Context, tx *sql.Tx, rec *record.Record, seq uint64) (bool, error) {
	var p nodeGatePayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil || p.Node == "" {
		return false, nil // moot: names no node
	}
	var err error
	if rec.Kind == KindEvict {
		r.evictions.Store(true) // the records after it in this batch ask
		_, err = tx.ExecContext(ctx, `INSERT INTO statelog_evictions(domain, node, evicted_at, readmitted_at) VALUES(?,?,?,0)
			ON CONFLICT(domain, node) DO UPDATE SET evicted_at = excluded.evicted_at, readmitted_at = 0`, string(r.domain), p.Node, seq)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE statelog_evictions SET readmitted_at = ? WHERE domain = ? AND node = ?`, seq, string(r.domain), p.Node)
	}
	return p.Node == r.cfg.Node, err
}

// loadEvicted reads whether this node stands evicted on this log, and
// whether any node has been.
func (r *Replica) loadEvicted(ctx context.Context) error {
	var some bool
	if err := r.cfg.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM statelog_evictions WHERE domain = ?)`, string(r.domain)).Scan(&some); err != nil {
		return err
	}
	r.evictions.Store(some)
	var evicted, readmitted uint64
	err := r.cfg.DB.QueryRowContext(ctx, `SELECT evicted_at, readmitted_at FROM statelog_evictions WHERE domain = ? AND node = ?`,
		string(r.domain), r.cfg.Node).Scan(&evicted, &readmitted)
	if errors.Is(err, sql.ErrNoRows) {
		r.evicted.Store(false)
		return nil
	}
	if err != nil {
		return err
	}
	r.evicted.Store(evicted > 0 && readmitted < evicted)
	return nil
}

// EvictedNodes are the nodes that stand evicted on this log as this
// node's rows say: the trim no longer waits for them.
func (r *Replica) EvictedNodes(ctx context.Context) ([]string, error) {
	rows, err := r.cfg.DB.QueryContext(ctx, `SELECT node FROM statelog_evictions WHERE domain = ? AND evicted_at > readmitted_at`, string(r.domain))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, rows.Err()
}

// Evicted reports whether this node stands evicted on this log.
func (r *Replica) Evicted() bool { return r.evicted.Load() }

// gateNode appends an eviction (evict true) or a readmission of node on
// this log under op, through the write path. A node cannot gate itself.
func (r *Replica) gateNode(ctx context.Context, op Op, node string, evict bool) (Written, error) {
	if node == r.cfg.Node {
		return Written{WriteResult: engine.WriteResult{OpID: op.ID.String()}}, engine.Refuse(engine.CodeInvalidArgument,
			"node %s cannot evict or readmit itself; run it on another data node.", node)
	}
	kind := KindReadmit
	if evict {
		kind = KindEvict
	}
	return r.Write(ctx, op, func(context.Context, *sql.Tx) (*Proposal, error) {
		return &Proposal{Kind: kind, Subject: NodeGateSubject(r.domain), Scope: []string{"node:" + node}, Payload: nodeGatePayload{Node: node}}, nil
	})
}
