package snapshot

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	sqlite "modernc.org/sqlite"
)

// Progress is told how far a long copy has come, in pages of the
// database (total is the database's size in pages at that moment).
type Progress func(done, total int64)

// stepPages is how many pages one backup step copies between progress
// reports: 16 MiB at SQLite's default 4 KiB page.
const stepPages = 4096

// backuper is the modernc driver connection's online backup.
type backuper interface {
	NewBackup(dstURI string) (*sqlite.Backup, error)
}

// TakeOptions say who takes a snapshot, when, and what else it does.
type TakeOptions struct {
	Donor string
	Now   time.Time
	// Hashes hashes every table in the copy's transaction
	// (Manifest.Tables), for verify-restore. A backup does; a donation,
	// which the adopter verifies by sha256 alone, does not, and is the
	// faster for it (the hashes read every row; the copy reads pages).
	Hashes   bool
	Progress Progress
}

// Take copies db into a new file under dir and returns its path and its
// manifest. The copy runs inside one read transaction on one connection:
// the checkpoints, the rules versions and the table hashes are read in it
// first, then the online backup copies the pages that same transaction
// sees, so all of them describe one instant. Writers are not held.
func Take(ctx context.Context, db *sql.DB, dir string, o TakeOptions) (path string, m Manifest, err error) {
	conn, err := db.Conn(ctx)
	if err != nil {
		return "", m, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN"); err != nil {
		return "", m, err
	}
	defer conn.ExecContext(context.Background(), "ROLLBACK")
	m = Manifest{TakenAt: o.Now.UTC(), Donor: o.Donor, Name: artefactName(o.Donor, o.Now)}
	if m.Domains, err = readPoints(ctx, conn); err != nil {
		return "", m, err
	}
	if o.Hashes {
		if m.Tables, err = TableHashes(ctx, conn); err != nil {
			return "", m, err
		}
	}
	f, err := os.CreateTemp(dir, "snapshot-*.db")
	if err != nil {
		return "", m, err
	}
	path = f.Name()
	f.Close()
	defer func() {
		if err != nil {
			os.Remove(path)
		}
	}()
	err = conn.Raw(func(dc any) error {
		b, ok := dc.(backuper)
		if !ok {
			return errors.New("snapshot: the database driver has no online backup")
		}
		return copyPages(ctx, b, path, o.Progress)
	})
	if err != nil {
		return path, m, fmt.Errorf("snapshot: copy the database: %w", err)
	}
	if m.SHA256, m.Size, err = hashFile(path, true); err != nil {
		return path, m, err
	}
	return path, m, nil
}

// copyPages runs the backup into dst a step at a time, reporting each.
// The source connection is inside a read transaction, which the backup
// reads through, so a writer elsewhere never restarts it.
func copyPages(ctx context.Context, b backuper, dst string, progress Progress) error {
	bk, err := b.NewBackup(dst)
	if err != nil {
		return err
	}
	for {
		if err := ctx.Err(); err != nil {
			bk.Finish()
			return err
		}
		more, err := bk.Step(stepPages)
		if err != nil {
			bk.Finish()
			return err
		}
		if progress != nil {
			total := int64(bk.PageCount())
			progress(total-int64(bk.Remaining()), total)
		}
		if !more {
			return bk.Finish()
		}
	}
}

// querier is a connection, a transaction or a database.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readPoints reads every domain's checkpoint and rules version.
func readPoints(ctx context.Context, q querier) (map[string]Point, error) {
	out := map[string]Point{}
	if ok, err := hasTable(ctx, q, "statelog_checkpoint"); err != nil || !ok {
		return out, err
	}
	rows, err := q.QueryContext(ctx, `SELECT domain, stream, generation, seq, applied_through, stream_created_at FROM statelog_checkpoint`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var d string
		var p Point
		var created int64
		if err := rows.Scan(&d, &p.Stream, &p.Generation, &p.Seq, &p.AppliedThrough, &created); err != nil {
			return nil, err
		}
		p.StreamCreatedAt = time.Unix(0, created).UTC()
		out[d] = p
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	rows.Close()
	if ok, err := hasTable(ctx, q, "statelog_rules"); err != nil || !ok {
		return out, err
	}
	for d, p := range out {
		err := q.QueryRowContext(ctx, `SELECT version FROM statelog_rules WHERE domain = ?`, d).Scan(&p.RulesVersion)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, err
		}
		out[d] = p
	}
	return out, nil
}

func hasTable(ctx context.Context, q querier, name string) (bool, error) {
	var n int
	err := q.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n)
	return n > 0, err
}

// hashFile returns the sha256 of path and its size, syncing it first when
// sync is set (an artefact is on disk before anything names it).
func hashFile(path string, sync bool) (string, int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if sync {
		if err := f.Sync(); err != nil {
			return "", 0, err
		}
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}

// Verify checks that the artefact at path hashes to m's sha256.
func Verify(path string, m Manifest) error {
	got, _, err := hashFile(path, false)
	if err != nil {
		return err
	}
	if got != m.SHA256 {
		return &CorruptError{Name: m.Name, Want: m.SHA256, Got: got}
	}
	return nil
}

// syncDir makes a rename in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(filepath.Clean(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
