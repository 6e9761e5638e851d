package sqlite

import (
	"context"
	"database/sql"
)

// Strings runs a query of one text column inside q (a transaction) and
// answers its values in order.
func Strings(ctx context.Context, q interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}, query string, args ...any) ([]string, error) {
	return Column[string](q.QueryContext(ctx, query, args...))
}

// Column reads the one column of rows (a query's answer, and its error)
// as T, in order, and closes them.
func Column[T any](rows *sql.Rows, err error) ([]T, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}
