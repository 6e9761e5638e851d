package applytest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// rows prints the tables named (every one holding rows where none is),
// each as its Print columns show it: a header of the columns, then a line
// a row.
func (s *script) rows(names []string, say func(string, ...any)) error {
	ctx := context.Background()
	t0 := strconv.FormatInt(start.UnixNano(), 10)
	for _, t := range s.d.Tables {
		if len(names) > 0 && !slices.Contains(names, t.Name) {
			continue
		}
		cols := "*"
		if t.Print != "" {
			cols = strings.ReplaceAll(t.Print, "$T0", t0)
		}
		head, lines, err := RenderRows(ctx, s.db, `SELECT `+cols+` FROM `+t.Name+` ORDER BY `+t.Order)
		if err != nil {
			return fmt.Errorf("%s: %w", t.Name, err)
		}
		if len(lines) == 0 && len(names) == 0 {
			continue
		}
		say("%s: %s", t.Name, strings.Join(head, " "))
		for _, l := range lines {
			say("  %s", l)
		}
		if len(lines) == 0 {
			say("  (none)")
		}
	}
	return nil
}

// gated prints the records a gate dropped (by the script's name of their
// operation) and those retained undecoded, with the scope they declare.
func (s *script) gated(say func(string, ...any)) error {
	ctx := context.Background()
	rows, err := s.db.QueryContext(ctx, `SELECT seq, op_id, kind, subject, writer, gate FROM statelog_gated WHERE domain = ? ORDER BY seq`, string(s.d.Domain.Name()))
	if err != nil {
		return err
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var seq uint64
		var op, kind, subject, writer, gate string
		if err := rows.Scan(&seq, &op, &kind, &subject, &writer, &gate); err != nil {
			return err
		}
		say("%d %s %s by %s (%s): dropped by the %s gate", seq, kind, s.short(subject), writer, s.names[op], gate)
		n++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	_, lines, err := RenderRows(ctx, s.db, `SELECT seq, scope FROM statelog_retained WHERE domain = ? ORDER BY seq`, string(s.d.Domain.Name()))
	if err != nil {
		return err
	}
	for _, l := range lines {
		seq, scope, _ := strings.Cut(l, " ")
		if q, err := strconv.Unquote(scope); err == nil {
			scope = q
		}
		say("%s retained undecoded, scope %s", seq, scope)
	}
	if n+len(lines) == 0 {
		say("none")
	}
	return nil
}
