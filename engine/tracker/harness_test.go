package tracker_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/ledger"
)

// lossyLog is the node's real broker log with one fault: the k-th append
// (barriers not counted) loses its acknowledgement — published for real
// (landed) or never sent (lost) — and the lookup that follows it is
// refused, so the write can establish nothing: unknown.
type lossyLog struct {
	statelog.Log
	mu      sync.Mutex
	count   int
	at      int  // 0: no fault
	landed  bool // publish for real before losing the ack
	blind   bool // the next LastOnSubject gets no answer
	appends atomic.Int64
}

func (l *lossyLog) arm(k int, landed bool) {
	l.mu.Lock()
	l.count, l.at, l.landed = 0, k, landed
	l.mu.Unlock()
}

func (l *lossyLog) Publish(ctx context.Context, subject string, data []byte, msgID string, expect *uint64) (statelog.PubAck, error) {
	if subject == statelog.BarrierSubject(engine.DomainTracker) {
		return l.Log.Publish(ctx, subject, data, msgID, expect)
	}
	l.mu.Lock()
	l.count++
	fault := l.at != 0 && l.count == l.at
	landed := l.landed
	if fault {
		l.blind = true
		l.at = 0
	}
	l.mu.Unlock()
	if !fault {
		ack, err := l.Log.Publish(ctx, subject, data, msgID, expect)
		if err == nil && !ack.Duplicate {
			l.appends.Add(1)
		}
		return ack, err
	}
	if landed {
		if _, err := l.Log.Publish(ctx, subject, data, msgID, expect); err != nil {
			return statelog.PubAck{}, err
		}
		l.appends.Add(1)
	}
	return statelog.PubAck{}, statelog.ErrNoAnswer
}

func (l *lossyLog) LastOnSubject(ctx context.Context, subject string) (statelog.StoredMsg, error) {
	l.mu.Lock()
	blind := l.blind
	l.blind = false
	l.mu.Unlock()
	if blind {
		// Refused rather than unanswered: a lookup that is not answered is
		// asked again for the publish timeout (an election may be under
		// way), and this fault is one the write can establish nothing from.
		return statelog.StoredMsg{}, errors.New("lossyLog: the lookup after the lost acknowledgement is refused")
	}
	return l.Log.LastOnSubject(ctx, subject)
}

// rig is one node with a lossy tracker log and fixed op ids, so two rigs
// running the same script file the same items under the same ids.
type rig struct {
	t    testing.TB
	n    *node.Node
	svc  *tracker.Service
	log  *lossyLog
	t0   time.Time
	next int
}

func newRig(t testing.TB, t0 time.Time, cfg ...node.Config) *rig {
	r := &rig{t: t, t0: t0}
	var c node.Config
	if len(cfg) > 0 {
		c = cfg[0]
	}
	c.Hooks.WrapLog = func(d engine.Domain, l statelog.Log) statelog.Log {
		if d != engine.DomainTracker {
			return l // only the tracker's log loses acks
		}
		r.log = &lossyLog{Log: l}
		return r.log
	}
	r.n = enginetest.OpenNode(t, c)
	r.svc = r.n.Tracker()
	return r
}

// op is the next fixed op id: the rig's mint instant, a counter in the
// random bits.
func (r *rig) op(verb, object string) engine.WriteOptions {
	r.next++
	u, err := ledger.NewV7At(r.t0)
	if err != nil {
		r.t.Fatal(err)
	}
	binary.BigEndian.PutUint32(u[12:], uint32(r.next))
	for i := 6; i < 12; i++ {
		u[i] = 0
	}
	u[6], u[8] = 0x70, 0x80
	_, _ = verb, object // the client-minted key form: ForCall names it
	return engine.WriteOptions{OpID: u.String()}
}

func (r *rig) project(key string) {
	r.t.Helper()
	pw, err := r.svc.CreateProject(context.Background(), r.op("create_project", key), key, key+" project")
	if err != nil || pw.Outcome != engine.Applied {
		r.t.Fatalf("create project %s: %+v %v", key, pw, err)
	}
}

func (r *rig) item(project, title, parent string) string {
	r.t.Helper()
	iw, err := r.svc.CreateWorkItem(context.Background(), r.op("create_work_item", project), tracker.NewWorkItem{Project: project, Title: title, Parent: parent, Description: "about " + title})
	if err != nil || iw.Outcome != engine.Applied || iw.Item == nil {
		r.t.Fatalf("create %s: %+v %v", title, iw, err)
	}
	return iw.Item.Key
}

func (r *rig) get(key string) tracker.WorkItem {
	r.t.Helper()
	ir, err := r.svc.GetWorkItem(context.Background(), engine.ReadOptions{}, key)
	if err != nil {
		r.t.Fatalf("get %s: %v", key, err)
	}
	return ir.Item
}

// dump renders the tracker's rows without the columns that name where on
// the log they were written (versions, sequences, instants), so two nodes
// that applied the same records in the same order dump the same.
func (r *rig) dump() string {
	r.t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT key, name, last_number, active FROM tracker_projects ORDER BY key`,
		`SELECT id, key, project, number, title, description, status, assignee, parent, reopens, handoffs, trashed != 0, trash_root, mark, merged_into FROM tracker_items ORDER BY id`,
		`SELECT key, id FROM tracker_item_keys ORDER BY key`,
		`SELECT item, tag FROM tracker_tags ORDER BY 1, 2`,
		`SELECT item, watcher FROM tracker_watchers ORDER BY 1, 2`,
		`SELECT item, kind, other, authored FROM tracker_edges ORDER BY 1, 2, 3`,
		`SELECT item, author, body FROM tracker_comments ORDER BY item, seq`,
		`SELECT item, field, old, new, handoffs FROM tracker_history ORDER BY item, seq, n`,
		`SELECT id, key FROM tracker_purged ORDER BY id`,
		`SELECT id, priority, due, estimate, type FROM tracker_item_fields ORDER BY id`,
		`SELECT i.id, s.title, s.description, s.comments FROM tracker_search s JOIN tracker_items i ON i.doc = s.rowid ORDER BY i.id`,
		`SELECT count(*) FROM tracker_search`,
	} {
		rows, err := r.n.DB().Query(q)
		if err != nil {
			r.t.Fatalf("%s: %v", q, err)
		}
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				r.t.Fatal(err)
			}
			fmt.Fprintln(&b, vals...)
		}
		rows.Close()
		b.WriteString("--\n")
	}
	return b.String()
}

// namesKey reports whether the op id an answer gave names the operation a
// client minted as key: its client form, with the key's verb and object.
func namesKey(answered, key string) bool {
	id, err := ledger.Parse(answered)
	return err == nil && ledger.IsClientForm(id.UUID) && ledger.KeyOf(id.UUID).String() == key
}
