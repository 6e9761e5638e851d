package sqlite_test

import (
	"slices"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// TestChunksCutRowsInFewLengths: every row goes once and in order, in
// chunks of at most 64, and the lengths over every run of 1 to 600 rows
// are few (each length is a statement text prepared once a connection).
func TestChunksCutRowsInFewLengths(t *testing.T) {
	lengths := map[int]bool{}
	for total := 1; total <= 600; total++ {
		rows := make([]int, total)
		for i := range rows {
			rows[i] = i
		}
		var got []int
		if err := sqlite.Chunks(rows, func(chunk []int) error {
			if len(chunk) == 0 || len(chunk) > 64 {
				t.Fatalf("%d rows: a chunk of %d", total, len(chunk))
			}
			lengths[len(chunk)] = true
			got = append(got, chunk...)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, rows) {
			t.Fatalf("%d rows: chunks gave %v", total, got)
		}
	}
	if len(lengths) > 11 {
		t.Fatalf("%d statement lengths: %v", len(lengths), lengths)
	}
	if got := sqlite.Tuples(2, 3); got != "(?,?,?),(?,?,?)" {
		t.Fatalf("Tuples(2, 3) = %q", got)
	}
}
