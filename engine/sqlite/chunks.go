package sqlite

import (
	"math/bits"
	"strings"
)

// A run of rows goes to the database as multi-row statements, and every
// length of statement is a text of its own, prepared once per connection:
// a text for every length would fill the cache. So rows are cut into a few
// lengths (ChunkLen): a whole chunk, else the largest power of two that
// fits, else, for a short rest, all of it.

// smallChunk is the longest rest a statement takes as it is.
const smallChunk = 8

// chunkMax is the longest chunk Chunks cuts.
const chunkMax = 64

// ChunkLen is how many of rem rows the next statement takes when a
// statement holds at most per: per, else the largest power of two that
// fits, else (at most smallChunk) all of them.
func ChunkLen(rem, per int) int {
	switch {
	case rem >= per:
		return per
	case rem <= smallChunk:
		return rem
	default:
		return 1 << (bits.Len(uint(rem)) - 1)
	}
}

// Chunks calls fn with successive chunks of rows, at most 64 rows each, of
// the lengths ChunkLen gives.
func Chunks[T any](rows []T, fn func(chunk []T) error) error {
	for len(rows) > 0 {
		n := ChunkLen(len(rows), chunkMax)
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
