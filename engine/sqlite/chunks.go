package sqlite

import "strings"

// ChunkSizes are the row counts of the multi-row statements Chunks cuts a
// run of rows into: a handful of fixed statement texts, each prepared once
// per connection, where a text for every length would fill the cache.
var ChunkSizes = []int{64, 16, 4, 1}

// Chunks calls fn with successive chunks of rows, each the longest of
// ChunkSizes that the rows left fill.
func Chunks[T any](rows []T, fn func(chunk []T) error) error {
	for len(rows) > 0 {
		n := 1
		for _, c := range ChunkSizes {
			if c <= len(rows) {
				n = c
				break
			}
		}
		if err := fn(rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// Placeholders is n comma-separated bind parameters: "?,?,?".
func Placeholders(n int) string {
	var b strings.Builder
	b.Grow(2 * n)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('?')
	}
	return b.String()
}

// Tuples is n rows of cols bind parameters, the VALUES list of a
// multi-row insert: "(?,?),(?,?)".
func Tuples(n, cols int) string {
	return strings.TrimSuffix(strings.Repeat("("+Placeholders(cols)+"),", n), ",")
}
