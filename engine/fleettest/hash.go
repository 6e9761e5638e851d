package fleettest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
)

// NodeLocalColumns are the columns whose values are this node's own
// rather than the log's, left out of every hash: the ledger's applied_at
// is the instant this node applied the operation, which differs per node.
var NodeLocalColumns = map[string]map[string]bool{
	"statelog_ledger": {"applied_at": true},
}

// TableHashes returns, for every table of db, a hash of its rows in a
// canonical order (each row rendered, the renderings sorted).
func TableHashes(ctx context.Context, db *sql.DB) (map[string]string, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`)
	if err != nil {
		return nil, err
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return nil, err
		}
		tables = append(tables, n)
	}
	rows.Close()
	// An FTS5 table's shadow tables hold its index as segments, whose
	// layout depends on how the rows were batched into transactions (and
	// on automerge), not on the rows: hash the virtual table's rows and
	// leave its shadows out.
	shadows, virtual := map[string]bool{}, map[string]bool{}
	vt, err := db.QueryContext(ctx, `SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%fts5%'`)
	if err != nil {
		return nil, err
	}
	for vt.Next() {
		var n string
		if err := vt.Scan(&n); err != nil {
			vt.Close()
			return nil, err
		}
		virtual[n] = true
		for _, suffix := range []string{"_data", "_idx", "_docsize", "_config", "_content"} {
			shadows[n+suffix] = true
		}
	}
	vt.Close()
	kept := tables[:0]
	for _, tb := range tables {
		if !shadows[tb] {
			kept = append(kept, tb)
		}
	}
	tables = kept
	out := map[string]string{}
	for _, tb := range tables {
		h, err := tableHash(ctx, db, tb, virtual[tb])
		if err != nil {
			return nil, fmt.Errorf("hash %s: %w", tb, err)
		}
		out[tb] = h
	}
	return out, nil
}

func tableHash(ctx context.Context, db *sql.DB, table string, virtual bool) (string, error) {
	cols := "*"
	if virtual {
		cols = "rowid, *" // an FTS5 row is its id and its text
	}
	rows, err := db.QueryContext(ctx, `SELECT `+cols+` FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	names, err := rows.Columns()
	if err != nil {
		return "", err
	}
	var lines []string
	for rows.Next() {
		vals := make([]any, len(names))
		ptrs := make([]any, len(names))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return "", err
		}
		var b strings.Builder
		for i, v := range vals {
			if NodeLocalColumns[table][names[i]] {
				continue
			}
			if i > 0 {
				b.WriteByte('\x1f')
			}
			switch x := v.(type) {
			case []byte:
				b.WriteString(hex.EncodeToString(x))
			default:
				fmt.Fprintf(&b, "%v", x)
			}
		}
		lines = append(lines, b.String())
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	sort.Strings(lines)
	h := sha256.New()
	for _, l := range lines {
		h.Write([]byte(l))
		h.Write([]byte{'\n'})
	}
	return fmt.Sprintf("%d:%s", len(lines), hex.EncodeToString(h.Sum(nil))[:16]), nil
}
