package applytest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/record"
	"github.com/crewlet/crewlet/engine/statelog"
)

// counting is a domain whose rows depend on how its records were
// batched: each record writes how many records its transaction applied
// before it (through what the domain holds in the transaction). The
// model must tell such a domain from a deterministic one.
type counting struct{ batchy bool }

func (counting) Name() engine.Domain { return "counting" }

func (counting) Schema() string {
	return `CREATE TABLE IF NOT EXISTS counting_rows (seq INTEGER PRIMARY KEY, nth INTEGER NOT NULL);`
}

// Kinds are the records the self-test appends.
func (counting) Kinds() map[string]int {
	return map[string]int{"counting.a": 1, "counting.b": 1, "counting.c": 1}
}

type tally struct{ n int }

func (*tally) Flush(context.Context, *sql.Tx, statelog.Applying) error { return nil }

func (c counting) Apply(ctx context.Context, tx *sql.Tx, rec *record.Record, at statelog.Applying) error {
	h, _ := at.Hold(func() statelog.Held { return &tally{} })
	t := h.(*tally)
	t.n++
	nth := 1
	if c.batchy {
		nth = t.n
	}
	_, err := at.Exec(ctx, tx, `INSERT INTO counting_rows(seq, nth) VALUES(?, ?)`, at.Seq, nth)
	return err
}

func countingScript(t *testing.T, batchy bool) *script {
	d := Domain{Domain: counting{batchy: batchy}, Tables: []Table{{Name: "counting_rows", Order: "seq"}},
		Record: func(verb string, _ Args) (*record.Record, error) {
			return Make("counting."+verb, statelog.SubjectPrefix("counting")+verb, nil, struct{}{})
		}}
	s := newScript(t, d)
	say := func(string, ...any) {}
	if err := s.appendAll("a\nb\nc\n", say); err != nil {
		t.Fatal(err)
	}
	if err := s.apply(say); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestModelTellsBatchingApart: three records applied as one batch by a
// domain that counts them differ from the same records replayed one a
// transaction, and the check says so; a domain whose rows do not depend
// on the batching passes.
func TestModelTellsBatchingApart(t *testing.T) {
	if v := countingScript(t, false).check(); len(v) != 0 {
		t.Fatalf("a deterministic domain failed the model: %v", v)
	}
	v := countingScript(t, true).check()
	if len(v) != 1 || !strings.Contains(v[0], "model only: counting_rows 2 1") || !strings.Contains(v[0], "node only:  counting_rows 2 2") {
		t.Fatalf("a domain whose rows depend on the batching: %q", v)
	}
}
