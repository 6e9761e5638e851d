package applytest

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/crewlet/crewlet/engine/sqlite"
	"github.com/crewlet/crewlet/engine/statelog"
)

// apply opens the node on its file: its reader hands it every record
// appended since, at once, and the applier takes them as one batch. The
// batch is then handed to it again, which must change nothing.
func (s *script) apply(say func(string, ...any)) error {
	last := uint64(len(s.stream.Messages()))
	if last == s.applied {
		say("nothing to apply")
		return nil
	}
	rep, err := s.open(node, s.db, false)
	if err != nil {
		return err
	}
	defer rep.Close()
	if err := s.settle(rep, node, last); err != nil {
		return err
	}
	st := rep.Stats()
	cp, err := rep.Checkpoint(context.Background())
	if err != nil {
		return err
	}
	say("applied %d-%d: %d records in %d batch(es), at most %d records and %d rows a transaction",
		s.applied+1, last, st.Deliveries, st.Batches, st.Apply.LongestBatch, st.Apply.LongestBatchRows)
	say("checkpoint %d, applied through %d", cp.Seq, cp.AppliedThrough)
	from := s.applied + 1
	s.applied = cp.Seq
	before, err := s.dump(s.db)
	if err != nil {
		return err
	}
	if err := s.stream.Redeliver(node, from, last); err != nil {
		return err
	}
	if err := s.settle(rep, node, last); err != nil {
		return err
	}
	after, err := s.dump(s.db)
	if err != nil {
		return err
	}
	if d := diff(before, after); d != "" {
		say("INVARIANT: the batch %d-%d handed over again changed the rows:\n%s", from, last, d)
		s.t.Errorf("the batch %d-%d handed over again changed the rows:\n%s", from, last, d)
	}
	return nil
}

// check holds the node's rows to the model: the records through its
// checkpoint replayed from scratch into a fresh database, one record a
// transaction. Nothing to do while the checkpoint stands where the model
// last matched it.
func (s *script) check() []string {
	if s.applied == s.checked {
		return nil
	}
	want, err := s.replay(s.applied)
	if err != nil {
		return []string{fmt.Sprintf("the model's replay through %d: %v", s.applied, err)}
	}
	got, err := s.dump(s.db)
	if err != nil {
		return []string{err.Error()}
	}
	s.checked = s.applied
	var out []string
	if d := diff(want, got); d != "" {
		out = append(out, fmt.Sprintf("the rows at checkpoint %d differ from the records replayed from scratch:\n%s", s.applied, d))
	}
	return append(out, s.sound()...)
}

// sound holds the node's file to what its rows imply alone: SQLite finds
// its tables and indexes consistent, the domain's Checks pass, and a
// domain with computed columns
// recomputes them from its rows to the values the apply wrote (its
// Rederive, rolled back, changes no row).
func (s *script) sound() []string {
	ctx := context.Background()
	var out []string
	var ok string
	if err := s.db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&ok); err != nil || ok != "ok" {
		out = append(out, fmt.Sprintf("integrity_check: %s %v", ok, err))
	}
	for _, q := range s.d.Checks {
		if _, err := s.db.ExecContext(ctx, q); err != nil {
			out = append(out, fmt.Sprintf("%s: %v", q, err))
		}
	}
	dd, derived := s.d.Domain.(statelog.DerivedDomain)
	if !derived {
		return out
	}
	tx, err := sqlite.BeginWrite(ctx, s.db)
	if err != nil {
		return append(out, err.Error())
	}
	defer tx.Rollback()
	if n, err := dd.Rederive(ctx, tx); err != nil || n != 0 {
		out = append(out, fmt.Sprintf("the computed columns recomputed from the rows changed %d rows (%v)", n, err))
	}
	return out
}

// replay applies the log through seq to a fresh database, handing its
// replica one record at a time, and dumps it.
func (s *script) replay(seq uint64) ([]string, error) {
	s.models++
	name := fmt.Sprintf("model%d", s.models)
	path := filepath.Join(s.dir, name+".db")
	db, err := sqlite.Open(path, 5)
	if err != nil {
		return nil, err
	}
	defer func() {
		db.Close()
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}()
	rep, err := s.open(name, db, true)
	if err != nil {
		return nil, err
	}
	defer rep.Close()
	for n := uint64(1); n <= seq; n++ {
		if _, err := s.stream.Deliver(name, 1); err != nil {
			return nil, err
		}
		if err := s.settle(rep, name, n); err != nil {
			return nil, err
		}
	}
	return s.dump(db)
}

// frameworkRows are the framework's rows of the domain that its records
// decide: the checkpoint, the anchors, what the gates dropped and what
// was retained, the ledger (but when each row was written), the audit
// trail and the node gates.
var frameworkRows = []string{
	`SELECT 'statelog_checkpoint', seq, applied_through FROM statelog_checkpoint WHERE domain = ?1`,
	`SELECT 'statelog_anchor', subject, seq FROM statelog_anchor WHERE domain = ?1 ORDER BY subject`,
	`SELECT 'statelog_gated', seq, op_id, subject, kind, writer, gate FROM statelog_gated WHERE domain = ?1 ORDER BY seq`,
	`SELECT 'statelog_retained', seq, scope, scope_known, data FROM statelog_retained WHERE domain = ?1 ORDER BY seq`,
	`SELECT 'statelog_ledger', op_id, subject, object, generation, seq, digest FROM statelog_ledger WHERE domain = ?1 ORDER BY op_id`,
	`SELECT 'statelog_audit', * FROM statelog_audit WHERE domain = ?1 ORDER BY seq`,
	`SELECT 'statelog_evictions', node, evicted_at, readmitted_at FROM statelog_evictions WHERE domain = ?1 ORDER BY node`,
}

// dump is every row the model compares, one line each: the domain's
// tables whole and the framework's rows of the domain.
func (s *script) dump(db *sql.DB) ([]string, error) {
	ctx := context.Background()
	var out []string
	for _, t := range s.d.Tables {
		cols := t.Compare
		if cols == "" {
			cols = "*"
		}
		lines, err := query(ctx, db, `SELECT '`+t.Name+`', `+cols+` FROM `+t.Name+` ORDER BY `+t.Order)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", t.Name, err)
		}
		out = append(out, lines...)
	}
	for _, q := range frameworkRows {
		lines, err := query(ctx, db, q, string(s.d.Domain.Name()))
		if err != nil {
			return nil, err
		}
		out = append(out, lines...)
	}
	return out, nil
}

// query renders every row of q as one line of its values.
func query(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, error) {
	_, lines, err := RenderRows(ctx, db, q, args...)
	return lines, err
}

// RenderRows runs q and renders its rows, a line each, and its columns.
func RenderRows(ctx context.Context, db *sql.DB, q string, args ...any) ([]string, []string, error) {
	rows, err := db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, nil, err
	}
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = render(v)
		}
		out = append(out, strings.Join(parts, " "))
	}
	return cols, out, rows.Err()
}

// render is one value as a script shows it: text bare unless it is empty
// or holds a space or a quote, then quoted.
func render(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return render(string(x))
	case string:
		if x == "" || strings.ContainsAny(x, " \"\n\t") {
			return fmt.Sprintf("%q", x)
		}
		return x
	}
	return fmt.Sprint(v)
}

// diff lists the lines one side holds and the other does not.
func diff(want, got []string) string {
	count := map[string]int{}
	for _, l := range got {
		count[l]++
	}
	var b strings.Builder
	for _, l := range want {
		if count[l] > 0 {
			count[l]--
			continue
		}
		fmt.Fprintf(&b, "  model only: %s\n", l)
	}
	for _, l := range got {
		if count[l] > 0 {
			count[l]--
			fmt.Fprintf(&b, "  node only:  %s\n", l)
		}
	}
	if b.Len() == 0 && len(want) == len(got) {
		for i := range want {
			if want[i] != got[i] {
				fmt.Fprintf(&b, "  order: model %s, node %s\n", want[i], got[i])
				break
			}
		}
	}
	return b.String()
}
