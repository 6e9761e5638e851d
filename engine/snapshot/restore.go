package snapshot

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	sqlitedrv "modernc.org/sqlite"

	"github.com/crewlet/crewlet/engine"
	"github.com/crewlet/crewlet/engine/sqlite"
)

// Install puts the verified artefact at src in place of the database at
// dbPath with one rename, so a kill at any point leaves either the old
// file or the whole new one. The old database must be closed and its WAL
// checkpointed away (Checkpointed): a WAL left beside the new file would
// be replayed onto it. src must be on dbPath's filesystem.
func Install(src, dbPath string) error {
	if fi, err := os.Stat(dbPath + "-wal"); err == nil && fi.Size() > 0 {
		return fmt.Errorf("snapshot: %s still has a write-ahead log of %d bytes; close and checkpoint it before installing a snapshot over it", dbPath, fi.Size())
	}
	// A -shm is only ever left by an older build (this one keeps the WAL
	// index in memory); either side file would describe the old database.
	for _, side := range []string{"-wal", "-shm"} {
		if err := os.Remove(dbPath + side); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := os.Rename(src, dbPath); err != nil {
		return err
	}
	return syncDir(filepath.Dir(dbPath))
}

// Checkpointed folds the WAL of the database at path into it and removes
// it, so nothing but the main file holds its rows; it returns the
// checkpoints the rows stand at (none for a database that does not exist).
func Checkpointed(ctx context.Context, path string, busyTimeoutSeconds int) (map[string]Point, error) {
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return map[string]Point{}, nil
	}
	db, err := sqlite.Open(path, busyTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	pts, err := readPoints(ctx, db)
	if err != nil {
		return nil, err
	}
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return nil, err
	}
	return pts, db.Close()
}

// Report is what verify-restore found.
type Report struct {
	Snapshot Manifest `json:"snapshot"`
	// Integrity is SQLite's integrity_check of the restored copy ("ok").
	Integrity string `json:"integrity"`
	// Tables is how many tables were compared; Mismatched names those
	// whose restored rows differ from the live copy's at the snapshot's
	// checkpoint (the hashes taken in the artefact's own transaction).
	Tables     int      `json:"tables"`
	Mismatched []string `json:"mismatched"`
	// LiveNow says whether this node's live copy still stands at the
	// snapshot's checkpoints, and so was hashed again and compared now
	// (LiveMismatched); Aligned says, in words, what was compared with what.
	LiveNow        bool     `json:"live_now"`
	LiveMismatched []string `json:"live_mismatched,omitempty"`
	Aligned        string   `json:"aligned"`
	OK             bool     `json:"ok"`
}

// VerifyRestore restores the newest snapshot (the newest backup, where
// one is stored) of repo into a scratch
// database under scratch and compares it, table by table, with the live
// copy at the same checkpoint. The live copy at that checkpoint is the one
// the artefact was copied from: its tables were hashed in the very read
// transaction the pages were copied in (Manifest.Tables). Where live (this
// node's database) still stands at those checkpoints, it is hashed again
// and compared too.
func VerifyRestore(ctx context.Context, repo Repository, live *sql.DB, scratch string) (Report, error) {
	var r Report
	ms, err := repo.List(ctx)
	if err != nil {
		return r, err
	}
	if len(ms) == 0 {
		return r, engine.Refuse(engine.CodeNotFound, "%s holds no snapshot yet; take one with `crewlet retention backup`.", repo.Where())
	}
	// The newest backup: a donation carries no table hashes to compare
	// with, so it is restored only where no backup is stored.
	r.Snapshot = ms[0]
	for _, m := range ms {
		if m.Tables != nil {
			r.Snapshot = m
			break
		}
	}
	dir, err := os.MkdirTemp(scratch, "verify-restore-*")
	if err != nil {
		return r, err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, sqlite.FileName)
	if err := repo.Fetch(ctx, r.Snapshot, path); err != nil {
		return r, err
	}
	db, err := sqlite.Open(path, 5)
	if err != nil {
		return r, fmt.Errorf("snapshot: open the restored copy: %w", err)
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, `PRAGMA integrity_check`).Scan(&r.Integrity); err != nil {
		return r, err
	}
	restored, err := TableHashes(ctx, db)
	if err != nil {
		return r, err
	}
	pts, err := readPoints(ctx, db)
	if err != nil {
		return r, err
	}
	r.Tables = len(restored)
	if r.Snapshot.Tables != nil {
		r.Mismatched = Diff(r.Snapshot.Tables, restored)
		r.Aligned = fmt.Sprintf("the restored copy of %s against %s's live copy at the same checkpoints, hashed in the read transaction the artefact was copied in", r.Snapshot.Name, r.Snapshot.Donor)
	} else {
		r.Aligned = fmt.Sprintf("%s is a donation, taken without table hashes", r.Snapshot.Name)
	}
	if live != nil {
		if err := r.compareLive(ctx, live, pts, restored); err != nil {
			return r, err
		}
	}
	compared := r.Snapshot.Tables != nil || r.LiveNow
	r.OK = compared && r.Integrity == "ok" && len(r.Mismatched) == 0 && len(r.LiveMismatched) == 0 && samePositions(pts, r.Snapshot.Domains)
	return r, nil
}

// compareLive hashes live again, in one read transaction, when it still
// stands at the restored copy's checkpoints.
func (r *Report) compareLive(ctx context.Context, live *sql.DB, pts map[string]Point, restored map[string]string) error {
	conn, err := live.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return err
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	now, err := readPoints(ctx, conn)
	if err != nil {
		return err
	}
	if !samePositions(now, pts) {
		r.Aligned += "; this node's live copy has moved past them, so it was not hashed again"
		return nil
	}
	hs, err := TableHashes(ctx, conn)
	if err != nil {
		return err
	}
	r.LiveNow = true
	r.LiveMismatched = Diff(hs, restored)
	r.Aligned += "; this node's live copy still stands there and was hashed again now"
	return nil
}

// samePositions compares two sets of checkpoints by what the rows reached
// (rules versions aside: they are the rows' own).
func samePositions(a, b map[string]Point) bool {
	if len(a) != len(b) {
		return false
	}
	for d, p := range a {
		q, ok := b[d]
		if !ok || p.Stream != q.Stream || p.Seq != q.Seq || p.Generation != q.Generation || !p.StreamCreatedAt.Equal(q.StreamCreatedAt) {
			return false
		}
	}
	return true
}

// restorer is the modernc driver connection's online restore.
type restorer interface {
	NewRestore(srcURI string) (*sqlitedrv.Backup, error)
}

// RestoreInto replaces every page of the open database db with the
// verified artefact at src, in one write transaction on one of db's
// connections: a node whose replicas are held (statelog.Replica.Resume)
// takes a snapshot without closing its database, and a kill half way
// leaves the old rows whole (the WAL commits all of it or none).
func RestoreInto(ctx context.Context, db *sql.DB, src string) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	return conn.Raw(func(dc any) error {
		r, ok := dc.(restorer)
		if !ok {
			return errors.New("snapshot: the database driver has no online restore")
		}
		for {
			bk, err := r.NewRestore(src)
			if err != nil {
				return err
			}
			_, err = bk.Step(-1)
			ferr := bk.Finish()
			if err == nil {
				return ferr
			}
			if !sqlite.IsBusy(err) || ctx.Err() != nil {
				return fmt.Errorf("snapshot: restore %s into the database: %w", src, err)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
		}
	})
}
