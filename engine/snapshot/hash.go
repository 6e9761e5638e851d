package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// nodeLocal are the columns whose values are a node's own rather than the
// log's, left out of every hash so two nodes' copies compare: the ledger's
// applied_at is the instant that node applied the operation.
var nodeLocal = map[string]map[string]bool{
	"statelog_ledger": {"applied_at": true},
}

// layoutOnly are the columns a layout added to repeat a value the file
// holds elsewhere, left out of every hash so a copy in an older layout
// (without them) hashes alike: tracker_history's doc is its item's
// tracker_items.doc, which is hashed there.
var layoutOnly = map[string]map[string]bool{
	"tracker_history": {"doc": true},
}

// TableHashes hashes every table q sees, in one pass over each: the row
// count and a sha256 of the rows in the table's own order (its key), which
// two copies of the same rows share. An FTS5 table's shadow tables hold
// its index in segments whose layout depends on how the rows were batched,
// so the virtual table's rows are hashed and its shadows left out.
func TableHashes(ctx context.Context, q querier) (map[string]string, error) {
	rows, err := q.QueryContext(ctx, `SELECT name, coalesce(sql, '') FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var tables []string
	virtual, shadows := map[string]bool{}, map[string]bool{}
	for rows.Next() {
		var n, ddl string
		if err := rows.Scan(&n, &ddl); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, n)
		if up := strings.ToUpper(ddl); strings.HasPrefix(up, "CREATE VIRTUAL TABLE") && strings.Contains(up, "FTS5") {
			virtual[n] = true
			for _, s := range []string{"_data", "_idx", "_docsize", "_config", "_content"} {
				shadows[n+s] = true
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, tb := range tables {
		if shadows[tb] {
			continue
		}
		h, err := tableHash(ctx, q, tb, virtual[tb])
		if err != nil {
			return nil, fmt.Errorf("snapshot: hash %s: %w", tb, err)
		}
		out[tb] = h
	}
	return out, nil
}

// hashOrder names the order a table whose layout changed hashes in: the
// key it had when its hash was first taken, so a copy in either layout
// (a node of an older build, a snapshot it took) hashes alike.
// tracker_items was a WITHOUT ROWID table keyed by id and is a rowid
// table keyed by doc now (engine/tracker/trackapply's itemsColumns);
// tracker_history was keyed by (item, seq, n) and appends now
// (historyColumns).
var hashOrder = map[string]string{
	"tracker_items":   "id",
	"tracker_history": "item, seq, n",
}

// tableHash hashes a table's rows in its own order (its key, or the one
// hashOrder names; an FTS5 table by rowid): each value rendered with its
// type, so 1, '1' and X'31' differ, the node-local columns left out.
func tableHash(ctx context.Context, q querier, table string, virtual bool) (string, error) {
	cols, order := "*", ""
	if virtual {
		cols, order = "rowid, *", " ORDER BY rowid" // an FTS5 row is its id and its text
	}
	if key, ok := hashOrder[table]; ok {
		order = " ORDER BY " + key
	}
	rows, err := q.QueryContext(ctx, `SELECT `+cols+` FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`+order)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return "", err
	}
	skip := make([]bool, len(names))
	for i, c := range names {
		skip[i] = nodeLocal[table][c] || layoutOnly[table][c]
	}
	vals := make([]any, len(names))
	ptrs := make([]any, len(names))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	h := sha256.New()
	n := 0
	var b []byte
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		b = b[:0]
		for i, v := range vals {
			if !skip[i] {
				b = appendValue(b, v)
			}
		}
		b = append(b, '\n')
		h.Write(b)
		n++
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return fmt.Sprintf("%d:%s", n, hex.EncodeToString(h.Sum(nil))[:16]), nil
}

// appendValue renders one value with a tag for its type.
func appendValue(b []byte, v any) []byte {
	switch x := v.(type) {
	case nil:
		b = append(b, 'N')
	case int64:
		b = strconv.AppendInt(append(b, 'i'), x, 10)
	case float64:
		b = strconv.AppendFloat(append(b, 'f'), x, 'g', -1, 64)
	case string:
		b = append(append(b, 's'), x...)
	case []byte:
		b = hex.AppendEncode(append(b, 'b'), x)
	case bool:
		b = strconv.AppendBool(append(b, 't'), x)
	case time.Time:
		b = x.UTC().AppendFormat(append(b, 'd'), time.RFC3339Nano)
	default:
		b = fmt.Appendf(append(b, '?'), "%v", x)
	}
	return append(b, 0x1f)
}

// Diff names the tables whose hashes differ between a and b (a table
// only one side holds included), in order.
func Diff(a, b map[string]string) []string {
	var out []string
	for t, h := range a {
		if b[t] != h {
			out = append(out, t)
		}
	}
	for t := range b {
		if _, ok := a[t]; !ok {
			out = append(out, t)
		}
	}
	sortStrings(out)
	return out
}
