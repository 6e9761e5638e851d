package sqlite_test

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/sqlite"
)

// BenchmarkBindParameters runs one statement with an IN list of 1 000
// values, bound as plain placeholders (?, ?, …) and as numbered ones
// (?1, ?2, …): the driver asks SQLite each parameter's name as it binds
// it, and SQLite finds a number's name by walking the list of every
// numbered name, so a long numbered list binds in quadratic time. That is
// why the bulk apply (trackapply's bulk_set.go) names its few fixed values
// and leaves its ids plain.
//
//	go test -run '^$' -bench BindParameters ./engine/sqlite/
func BenchmarkBindParameters(b *testing.B) {
	const n = 1000
	db, err := sqlite.Open(filepath.Join(b.TempDir(), "bind.db"), 5)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	args := make([]any, n)
	for i := range args {
		args[i] = "wi_01a2517b19e27000c" + strconv.Itoa(i)
	}
	numbered := make([]string, n)
	for i := range numbered {
		numbered[i] = "?" + strconv.Itoa(i+1)
	}
	for _, c := range []struct{ name, list string }{
		{"plain", sqlite.Placeholders(n)},
		{"numbered", strings.Join(numbered, ",")},
	} {
		b.Run(c.name, func(b *testing.B) {
			st, err := db.Prepare(`SELECT count(*) FROM (SELECT 'x' AS v) WHERE v IN (` + c.list + `)`)
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			for i := 0; i < b.N; i++ {
				var got int
				if err := st.QueryRow(args...).Scan(&got); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
