package statelog_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
)

// kvDomain is the scripts' domain: one table of keys, each record about
// one key on its own subject. put sets a value, add adds to a number (so
// a record applied twice shows in the value, not only in the ledger), del
// removes the key. A key's version is the seq of the last record about it.
type kvDomain struct{}

const kvName engine.Domain = "kv"

func (kvDomain) Name() engine.Domain { return kvName }

func (kvDomain) Schema() string {
	return `CREATE TABLE IF NOT EXISTS kv (
	key     TEXT PRIMARY KEY,
	value   TEXT NOT NULL,
	version INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_purged (key TEXT PRIMARY KEY) WITHOUT ROWID;`
}

// kvPayload is a kv record's body.
type kvPayload struct {
	Key   string `json:"key"`
	Value string `json:"value,omitempty"`
	By    int64  `json:"by,omitempty"`
}

const (
	kindPut = "kv.put"
	kindAdd = "kv.add"
	kindDel = "kv.del"
	// kindPurge removes a key for ever: its marker holds every later
	// record about the key (the deletion gate, kvPurgedGate).
	kindPurge = "kv.purge"
)

// Kinds are the kv records at format 1; a script plays a record of a later
// format with append's version=.
func (kvDomain) Kinds() map[string]int {
	return map[string]int{kindPut: 1, kindAdd: 1, kindDel: 1, kindPurge: 1}
}

// Gates is the kv domain's own gate, the deletion gate.
func (kvDomain) Gates() []statelog.Gate { return []statelog.Gate{kvPurgedGate{}} }

// GateKinds are the records that install it.
func (kvDomain) GateKinds() []string { return []string{kindPurge} }

// kvPurgedGate drops every record about a purged key, whoever wrote it
// and however late it comes, as the tracker's deletion gate does a
// purged task's.
type kvPurgedGate struct{}

func (kvPurgedGate) Name() string { return "deleted" }

func (kvPurgedGate) Holds(ctx context.Context, tx statelog.Reader, rec *record.Record, _ uint64) (bool, error) {
	var p kvPayload
	if json.Unmarshal(rec.Payload, &p) != nil || p.Key == "" {
		return false, nil
	}
	var purged int
	err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM kv_purged WHERE key = ?)`, p.Key).Scan(&purged)
	return purged == 1, err
}

func kvSubject(key string) string { return statelog.SubjectPrefix(kvName) + "k." + key }

func (kvDomain) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	var p kvPayload
	if err := json.Unmarshal(rec.Payload, &p); err != nil || p.Key == "" {
		return nil // moot: names no key
	}
	var err error
	switch rec.Kind {
	case kindPut:
		_, err = at.Exec(ctx, tx, `INSERT INTO kv(key, value, version) VALUES(?,?,?)
			ON CONFLICT(key) DO UPDATE SET value = excluded.value, version = excluded.version`, p.Key, p.Value, at.Seq)
	case kindAdd:
		_, err = at.Exec(ctx, tx, `INSERT INTO kv(key, value, version) VALUES(?,?,?)
			ON CONFLICT(key) DO UPDATE SET value = CAST(CAST(value AS INTEGER) + ? AS TEXT), version = excluded.version`,
			p.Key, strconv.FormatInt(p.By, 10), at.Seq, p.By)
	case kindDel:
		_, err = at.Exec(ctx, tx, `DELETE FROM kv WHERE key = ?`, p.Key)
	case kindPurge:
		if _, err = at.Exec(ctx, tx, `INSERT INTO kv_purged(key) VALUES(?) ON CONFLICT DO NOTHING`, p.Key); err == nil {
			_, err = at.Exec(ctx, tx, `DELETE FROM kv WHERE key = ?`, p.Key)
		}
	}
	return err
}

// kvRow is one key as the rows hold it.
type kvRow struct {
	Value   string
	Version uint64
}

// kvModel is what a log prefix must leave in a node's rows: the first
// copy of each operation applies, every later copy applies nothing, and
// every record moves its subject's anchor. The scripts hold every node to
// it after every step.
type kvModel struct {
	rows    map[string]kvRow
	ledger  map[string]uint64 // op id → the seq of its first copy
	anchors map[string]uint64 // subject → the last seq on it
	gated   map[string]uint64 // the records the eviction gate dropped, by seq
	// retained are the records a build reading formats up to the model's
	// holds back, by seq: past its format, or whose scope meets one that
	// is (a record nobody can read the scope of meets every scope).
	retained map[string]uint64
}

func newModel() kvModel {
	return kvModel{rows: map[string]kvRow{}, ledger: map[string]uint64{}, anchors: map[string]uint64{}, gated: map[string]uint64{}, retained: map[string]uint64{}}
}

// firstRetained is the lowest retained seq, 0 when none is.
func (m kvModel) firstRetained() uint64 {
	first := uint64(0)
	for _, seq := range m.retained {
		if first == 0 || seq < first {
			first = seq
		}
	}
	return first
}

// replayKV is what a build reading formats up to format holds after the
// log through a seq: what it retained, and the rows of everything else,
// each object's records applied in order whenever the build applied them.
func replayKV(msgs []statelog.StoredMsg, through uint64, format int) kvModel {
	m := newModel()
	held, heldAll := map[string]bool{}, false
	retain := func(msg statelog.StoredMsg, scope []string, known bool) {
		m.anchors[msg.Subject] = msg.Seq
		m.retained[strconv.FormatUint(msg.Seq, 10)] = msg.Seq
		heldAll = heldAll || !known
		for _, s := range scope {
			held[s] = true
		}
	}
	// The node gate: when each node was last evicted and readmitted; the
	// deletion gate: the keys purged.
	evicted, readmitted, purged := map[string]uint64{}, map[string]uint64{}, map[string]bool{}
	for _, msg := range msgs {
		if msg.Seq > through {
			break
		}
		rec, err := record.DecodeUpTo(msg.Data, format)
		var ue *record.UndecodableError
		if errors.As(err, &ue) {
			retain(msg, ue.Scope, ue.ScopeKnown)
			continue
		}
		if err != nil || rec.Kind == record.KindBarrier {
			continue
		}
		if heldAll || slices.ContainsFunc(rec.Scope, func(s string) bool { return held[s] }) {
			retain(msg, rec.Scope, rec.Scope != nil)
			continue
		}
		m.anchors[msg.Subject] = msg.Seq
		var p kvPayload
		_ = json.Unmarshal(rec.Payload, &p)
		if e := evicted[rec.Writer]; e > 0 && msg.Seq > e && readmitted[rec.Writer] < e || p.Key != "" && purged[p.Key] {
			m.gated[strconv.FormatUint(msg.Seq, 10)] = msg.Seq
			continue
		}
		if _, dup := m.ledger[rec.OpID]; dup && rec.OpID != "" {
			continue
		}
		var gate struct {
			Node string `json:"node"`
		}
		switch {
		case rec.Kind == statelog.KindEvict || rec.Kind == statelog.KindReadmit:
			if json.Unmarshal(rec.Payload, &gate) == nil && gate.Node != "" {
				if rec.Kind == statelog.KindEvict {
					evicted[gate.Node], readmitted[gate.Node] = msg.Seq, 0
				} else if evicted[gate.Node] > 0 {
					readmitted[gate.Node] = msg.Seq
				}
			}
			if rec.OpID != "" {
				m.ledger[rec.OpID] = msg.Seq
			}
			continue
		}
		if p.Key != "" {
			switch rec.Kind {
			case kindPut:
				m.rows[p.Key] = kvRow{Value: p.Value, Version: msg.Seq}
			case kindAdd:
				n, _ := strconv.ParseInt(m.rows[p.Key].Value, 10, 64)
				m.rows[p.Key] = kvRow{Value: strconv.FormatInt(n+p.By, 10), Version: msg.Seq}
			case kindDel:
				delete(m.rows, p.Key)
			case kindPurge:
				delete(m.rows, p.Key)
				purged[p.Key] = true
			}
		}
		if rec.OpID != "" {
			m.ledger[rec.OpID] = msg.Seq
		}
	}
	return m
}

// kvDecide is the decision of one kv write against the local rows:
// put under if_match refuses stale unless the key's version is it (0:
// the key is absent), del refuses not_found for an absent key. Both
// refusals are decided from rows, so the write path settles them at the
// log's end before answering.
func kvDecide(kind string, p kvPayload, ifMatch *uint64) statelog.Decide {
	return func(ctx context.Context, tx *sql.Tx) (*statelog.Proposal, error) {
		var version uint64
		err := tx.QueryRowContext(ctx, `SELECT version FROM kv WHERE key = ?`, p.Key).Scan(&version)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		absent := errors.Is(err, sql.ErrNoRows)
		if ifMatch != nil && version != *ifMatch {
			return nil, engine.Refuse(engine.CodeStale, "%s is at version %d, not %d", p.Key, version, *ifMatch)
		}
		if kind == kindDel && absent {
			return nil, engine.Refuse(engine.CodeNotFound, "%s is not there", p.Key)
		}
		return &statelog.Proposal{Kind: kind, Subject: kvSubject(p.Key), Scope: []string{"kv:" + p.Key}, Payload: p}, nil
	}
}

// readKV reads one key inside a read's snapshot.
func readKV(key string, out *kvRow) statelog.ObjectReadFunc {
	return func(ctx context.Context, tx *sql.Tx) ([]string, error) {
		scope := []string{"kv:" + key}
		err := tx.QueryRowContext(ctx, `SELECT value, version FROM kv WHERE key = ?`, key).Scan(&out.Value, &out.Version)
		if errors.Is(err, sql.ErrNoRows) {
			return scope, engine.Refuse(engine.CodeNotFound, "%s is not there", key)
		}
		return scope, err
	}
}

// kvState is a node's rows, ledger, anchors and checkpoint read in one
// snapshot, so they can be held to the model together.
type kvState struct {
	seq, appliedThrough uint64
	model               kvModel
}

func readState(ctx context.Context, db *sql.DB) (kvState, error) {
	st := kvState{model: newModel()}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return st, err
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `SELECT seq, applied_through FROM statelog_checkpoint WHERE domain = ?`, string(kvName)).
		Scan(&st.seq, &st.appliedThrough); err != nil {
		return st, err
	}
	scan := func(query string, f func(*sql.Rows) error, args ...any) error {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			if err := f(rows); err != nil {
				return err
			}
		}
		return rows.Err()
	}
	if err := scan(`SELECT key, value, version FROM kv`, func(rs *sql.Rows) error {
		var k string
		var r kvRow
		if err := rs.Scan(&k, &r.Value, &r.Version); err != nil {
			return err
		}
		st.model.rows[k] = r
		return nil
	}); err != nil {
		return st, err
	}
	if err := scan(`SELECT op_id, seq FROM statelog_ledger WHERE domain = ?`, func(rs *sql.Rows) error {
		var op string
		var seq uint64
		if err := rs.Scan(&op, &seq); err != nil {
			return err
		}
		st.model.ledger[op] = seq
		return nil
	}, string(kvName)); err != nil {
		return st, err
	}
	if err := scan(`SELECT subject, seq FROM statelog_anchor WHERE domain = ?`, func(rs *sql.Rows) error {
		var subject string
		var seq uint64
		if err := rs.Scan(&subject, &seq); err != nil {
			return err
		}
		st.model.anchors[subject] = seq
		return nil
	}, string(kvName)); err != nil {
		return st, err
	}
	for table, into := range map[string]map[string]uint64{"statelog_gated": st.model.gated, "statelog_retained": st.model.retained} {
		if err := scan(`SELECT seq FROM `+table+` WHERE domain = ?`, func(rs *sql.Rows) error {
			var seq uint64
			if err := rs.Scan(&seq); err != nil {
				return err
			}
			into[strconv.FormatUint(seq, 10)] = seq
			return nil
		}, string(kvName)); err != nil {
			return st, err
		}
	}
	return st, nil
}

// diff says where got departs from want, "" when it does not.
func (want kvModel) diff(got kvModel) string {
	var out string
	cmp := func(what string, w, g map[string]uint64) {
		for k, v := range w {
			if g[k] != v {
				out += fmt.Sprintf("%s %s: want %d, have %d; ", what, k, v, g[k])
			}
		}
		for k, v := range g {
			if _, ok := w[k]; !ok {
				out += fmt.Sprintf("%s %s: want none, have %d; ", what, k, v)
			}
		}
	}
	for k, w := range want.rows {
		if g, ok := got.rows[k]; !ok || g != w {
			out += fmt.Sprintf("row %s: want %s@%d, have %+v (present %v); ", k, w.Value, w.Version, g, ok)
		}
	}
	for k, g := range got.rows {
		if _, ok := want.rows[k]; !ok {
			out += fmt.Sprintf("row %s: want none, have %s@%d; ", k, g.Value, g.Version)
		}
	}
	cmp("ledger", want.ledger, got.ledger)
	cmp("anchor", want.anchors, got.anchors)
	cmp("gated", want.gated, got.gated)
	cmp("retained", want.retained, got.retained)
	return out
}

// encodeRecord is a kv record as another writer would append it, at
// format version (a build past this one's writes above
// record.FormatVersion).
func encodeRecord(kind, opID, writer string, p kvPayload, version int) ([]byte, error) {
	payload, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	return record.Encode(&record.Record{Kind: kind, Version: version, OpID: opID, Writer: writer, Generation: 1,
		Subject: kvSubject(p.Key), Scope: []string{"kv:" + p.Key}, Payload: payload})
}

// scopelessRecord is a record whose envelope no build reads, its scope
// included: the version is not a number.
func scopelessRecord(kind string) []byte {
	return fmt.Appendf(nil, `{"kind":%q,"v":"next","writer":"n9","gen":1}`, kind)
}
