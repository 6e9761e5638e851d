package kb_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/enginetest"
	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/ledger"
)

var bg = context.Background()

func lin() engine.ReadOptions { return engine.ReadOptions{Level: engine.Linearizable} }

func openNode(t *testing.T, cfg node.Config) (*node.Node, *kb.Service) {
	t.Helper()
	n := enginetest.OpenNode(t, cfg)
	return n, n.Pages()
}

// lastSeq is the pages log's last write (barriers excluded).
func lastSeq(t *testing.T, n *node.Node) uint64 {
	t.Helper()
	return enginetest.LastWrite(t, n, engine.DomainPages)
}

func mustSpace(t *testing.T, svc *kb.Service, key string) kb.Space {
	t.Helper()
	w, err := svc.CreateSpace(bg, engine.WriteOptions{}, key, key+" space")
	if err != nil || w.Outcome != engine.Applied || w.Space == nil {
		t.Fatalf("create space %s: %+v %v", key, w, err)
	}
	return *w.Space
}

func mustPage(t *testing.T, svc *kb.Service, space, parent, title, body string) kb.Page {
	t.Helper()
	w, err := svc.CreatePage(bg, engine.WriteOptions{}, kb.NewPage{Space: space, Parent: parent, Title: title, Body: body})
	if err != nil || w.Outcome != engine.Applied || w.Page == nil {
		t.Fatalf("create page %q: %+v %v", title, w, err)
	}
	return *w.Page
}

func mustGet(t *testing.T, svc *kb.Service, id string) kb.Page {
	t.Helper()
	r, err := svc.GetPage(bg, lin(), id)
	if err != nil {
		t.Fatalf("get %s: %v", id, err)
	}
	return r.Page
}

func mustUpdate(t *testing.T, svc *kb.Service, id string, p kb.PagePatch) kb.Page {
	t.Helper()
	cur := mustGet(t, svc, id)
	w, err := svc.UpdatePage(bg, engine.WriteOptions{}, id, cur.Version, p)
	if err != nil || w.Outcome != engine.Applied || w.Page == nil {
		t.Fatalf("update %s: %+v %v", id, w, err)
	}
	return *w.Page
}

func ptr[T any](v T) *T { return &v }

func seqOf(t *testing.T, token string) uint64 {
	t.Helper()
	p, err := engine.ParsePosition(token)
	if err != nil || p.Stream != engine.StreamPages {
		t.Fatalf("position %q: %v", token, err)
	}
	return p.Seq
}

// recordAt decodes the record the broker holds at seq.
func recordAt(t *testing.T, n *node.Node, seq uint64) *record.Record {
	t.Helper()
	m, err := n.Log(engine.DomainPages).Get(bg, seq)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := record.Decode(m.Data)
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// publishRaw appends a record straight onto the pages stream, as a writer
// that decided against old rows (or another build) would: no expectation,
// nothing decided here.
func publishRaw(t *testing.T, n *node.Node, writer, kind, subject string, scope []string, payload any) uint64 {
	t.Helper()
	op, err := ledger.MintFor(time.Now(), "raw", "x", "")
	if err != nil {
		t.Fatal(err)
	}
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	rec := &record.Record{Kind: kind, Version: 1, OpID: op.String(), Writer: writer, Generation: 1, Subject: subject, Scope: scope, Payload: body}
	data, err := record.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	ack, err := n.Log(engine.DomainPages).Publish(bg, subject, data, op.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	waitApplied(t, n, ack.Seq)
	return ack.Seq
}

func waitApplied(t *testing.T, n *node.Node, seq uint64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(bg, 10*time.Second)
	defer cancel()
	if err := n.Replica(engine.DomainPages).WaitApplied(ctx, seq); err != nil {
		t.Fatalf("not applied through %d: %v", seq, err)
	}
}

// refusedWith checks err is a refusal with code and a sentence.
func refusedWith(t *testing.T, err error, code engine.Code, mention string) *engine.Refusal {
	t.Helper()
	r, ok := engine.AsRefusal(err)
	if !ok || r.Code != code {
		t.Fatalf("want refusal %s, got %v", code, err)
	}
	if !strings.Contains(r.Message, mention) || !strings.HasSuffix(strings.TrimSpace(r.Message), ".") {
		t.Fatalf("refusal %q does not say %q in a sentence", r.Message, mention)
	}
	return r
}

func count(t *testing.T, n *node.Node, q string, args ...any) int {
	t.Helper()
	var c int
	if err := n.DB().QueryRow(q, args...).Scan(&c); err != nil {
		t.Fatal(err)
	}
	return c
}

func parentOf(t *testing.T, svc *kb.Service, id string) string {
	t.Helper()
	return mustGet(t, svc, id).Parent
}

// lifeRows renders every lifecycle row a node holds, in a fixed order.
func lifeRows(t *testing.T, n *node.Node) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		`SELECT id || space || parent || title || body || version || scoped_through FROM kb_pages ORDER BY n`,
		`SELECT key || seq FROM kb_archived ORDER BY key`,
		`SELECT id || seq FROM kb_trash ORDER BY id`,
		`SELECT id || seq || kind || actor || at || space || parent || title || body || trashed FROM kb_versions ORDER BY id, seq`,
		`SELECT id || page || author || body || version FROM kb_comments ORDER BY id`,
	} {
		rows, err := n.DB().Query(q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintln(&b, s)
		}
		rows.Close()
	}
	return b.String()
}
