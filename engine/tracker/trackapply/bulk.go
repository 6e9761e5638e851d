package trackapply

import (
	"context"
	"database/sql"
	"strings"
	"sync"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// MaxRowsPerStatement caps a multi-row insert whatever the bind-parameter
// limit allows: past it a statement's parse and plan cost grows for no
// gain, and the driver accepts more parameters than SQLite's own default
// ceiling, so this is what binds in practice.
const MaxRowsPerStatement = 1000

// maxProbe is SQLite's default SQLITE_MAX_VARIABLE_NUMBER (3.32 on).
const maxProbe = 32766

var (
	probeOnce  sync.Once
	bindLimit  = 999 // the pre-3.32 ceiling, until probed
	probeError error
)

// BindLimit probes, once per process, how many bind parameters one
// statement may carry on this driver, halving from SQLite's default
// ceiling until a statement of that many parameters prepares.
func BindLimit(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) int {
	probeOnce.Do(func() {
		for n := maxProbe; n >= 999; n /= 2 {
			args := make([]any, n)
			for i := range args {
				args[i] = 1
			}
			var one int
			err := q.QueryRowContext(ctx, "SELECT 1 WHERE 1 IN ("+sqlite.Placeholders(n)+")", args...).Scan(&one)
			if err == nil {
				bindLimit = n
				return
			}
			probeError = err
		}
	})
	return bindLimit
}

// traceStatement, when set, is told the rows of every multi-row statement
// a rowBuffer runs: a test's seam (export_test.go), nil in a node.
var traceStatement func(head string, rows int)

// rowBuffer collects the rows of one child table and writes them as
// multi-row inserts, each at most MaxRowsPerStatement rows and within the
// probed bind-parameter limit.
type rowBuffer struct {
	head string // INSERT INTO t(a,b,c) VALUES
	tail string // ON CONFLICT ... (may be empty)
	cols int
	args []any
}

// OR FAIL: a statement of many rows under the default ABORT keeps a
// statement journal (every page it changes copied first, to undo the
// statement alone), and under FAIL it keeps none. Nothing needs the
// statement undone alone: a failed statement fails the record's apply,
// and the applier rolls its whole transaction back.
func newRowBuffer(table string, cols []string, tail string) *rowBuffer {
	return &rowBuffer{head: "INSERT OR FAIL INTO " + table + "(" + strings.Join(cols, ",") + ") VALUES ", tail: tail, cols: len(cols)}
}

func (b *rowBuffer) add(vals ...any) { b.args = append(b.args, vals...) }

func (b *rowBuffer) rows() int { return len(b.args) / b.cols }

// flush writes the buffered rows and empties the buffer; it returns how
// many rows it sent.
//
// Every statement goes through prepared (a statement prepared once per
// connection): parsing a many-row statement each time cost more than
// running it (a bulk record's 800 rows parsed were most of its apply).
// So that the texts are few, the rows go in the chunks sqlite.ChunkLen
// gives: at most a score of texts a table.
func (b *rowBuffer) flush(ctx context.Context, tx *sql.Tx, prepared func(context.Context, *sql.Tx, string, ...any) (sql.Result, error)) (int, error) {
	return b.each(ctx, tx, func(q string, args []any) error {
		var err error
		if prepared != nil {
			_, err = prepared(ctx, tx, q, args...)
		} else {
			_, err = tx.ExecContext(ctx, q, args...)
		}
		return err
	})
}

// each runs, through run, every statement the buffered rows make (in the
// chunks flush describes), then empties the buffer; it returns how many
// rows it sent.
func (b *rowBuffer) each(ctx context.Context, tx *sql.Tx, run func(q string, args []any) error) (int, error) {
	total := b.rows()
	if total == 0 {
		return 0, nil
	}
	per := min(MaxRowsPerStatement, BindLimit(ctx, tx)/b.cols)
	var full string // the statement for a whole chunk, built once
	for start := 0; start < total; {
		n := sqlite.ChunkLen(total-start, per)
		var q string
		if n == per && full != "" {
			q = full
		} else {
			q = b.head + sqlite.Tuples(n, b.cols) + " " + b.tail
			if n == per {
				full = q
			}
		}
		if err := run(q, b.args[start*b.cols:(start+n)*b.cols]); err != nil {
			return 0, err
		}
		if traceStatement != nil {
			traceStatement(b.head, n)
		}
		start += n
	}
	b.args = b.args[:0]
	return total, nil
}
