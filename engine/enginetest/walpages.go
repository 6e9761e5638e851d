package enginetest

import (
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"os"
	"testing"
)

// WALPages reads the WAL of db's main database file and counts its frames
// by the b-tree each frame's page belongs to now (SQLite's dbstat: a
// table's or an index's name, sqlite_schema for page 1, "free" for a page
// no b-tree holds), and in all. Taken after a TRUNCATE checkpoint and one
// operation, it says which tables and indexes the operation's commits
// wrote and how many pages of each: what a commit writes and checksums,
// one pwrite a page.
func WALPages(ctx context.Context, db *sql.DB) (byTree map[string]int, total int, err error) {
	var seq int
	var name, file string
	if err := db.QueryRowContext(ctx, `PRAGMA database_list`).Scan(&seq, &name, &file); err != nil {
		return nil, 0, err
	}
	wal, err := os.ReadFile(file + "-wal")
	if err != nil {
		return nil, 0, err
	}
	const walHeader, frameHeader = 32, 24
	if len(wal) < walHeader {
		return map[string]int{}, 0, nil
	}
	pageSize := int(binary.BigEndian.Uint32(wal[8:12]))
	if pageSize < 512 {
		return nil, 0, errors.New("enginetest: the WAL header names no page size")
	}
	salt := wal[16:24]
	pages := map[uint32]int{}
	for off := walHeader; off+frameHeader+pageSize <= len(wal); off += frameHeader + pageSize {
		h := wal[off : off+frameHeader]
		if string(h[8:16]) != string(salt) {
			break // a frame of an earlier generation of the file
		}
		pages[binary.BigEndian.Uint32(h[0:4])]++
		total++
	}
	owner := map[uint32]string{}
	rows, err := db.QueryContext(ctx, `SELECT name, pageno FROM dbstat`)
	if err != nil {
		return nil, 0, err
	}
	defer rows.Close()
	for rows.Next() {
		var n string
		var p uint32
		if err := rows.Scan(&n, &p); err != nil {
			return nil, 0, err
		}
		owner[p] = n
	}
	if err := rows.Err(); err != nil {
		return nil, 0, err
	}
	byTree = map[string]int{}
	for p, frames := range pages {
		n, ok := owner[p]
		if !ok {
			n = "free"
		}
		byTree[n] += frames
	}
	return byTree, total, nil
}

// CommitPages empties db's WAL (a TRUNCATE checkpoint), runs op with the
// benchmark's timer running, and counts the pages op's commits wrote
// (WALPages), the timer stopped around everything but op.
func CommitPages(b *testing.B, db *sql.DB, op func() error) (byTree map[string]int, total int) {
	b.Helper()
	b.StopTimer()
	defer b.StartTimer()
	if _, err := db.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	err := op()
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	byTree, total, err = WALPages(context.Background(), db)
	if err != nil {
		b.Fatal(err)
	}
	return byTree, total
}
