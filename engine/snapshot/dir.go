package snapshot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
)

// Dir is a repository in a directory (retention.snapshot_dir): each
// artefact is <donor>.<taken_at>.db beside its manifest
// <donor>.<taken_at>.json, the manifest written (by a rename) only once
// the artefact is whole and synced, so a listed artefact is always whole.
type Dir struct {
	Path string
}

// Where names the directory.
func (d Dir) Where() string { return "the directory " + d.Path }

func (d Dir) base(m Manifest) string {
	return filepath.Join(d.Path, strings.ReplaceAll(url.PathEscape(m.Name), "%2F", "."))
}

// Put copies the artefact in, then its manifest, then drops the donor's
// surplus.
func (d Dir) Put(ctx context.Context, m Manifest, path string) error {
	if err := os.MkdirAll(d.Path, 0o700); err != nil {
		return err
	}
	base := d.base(m)
	if err := copyFile(path, base+".db", nil); err != nil {
		return fmt.Errorf("snapshot: put %s in %s: %w", m.Name, d.Path, err)
	}
	tmp := base + ".json.tmp"
	if err := os.WriteFile(tmp, []byte(m.encode()), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, base+".json"); err != nil {
		return err
	}
	if err := syncDir(d.Path); err != nil {
		return err
	}
	all, err := d.List(ctx)
	if err != nil {
		return err
	}
	for _, old := range surplus(all, m.Donor) {
		ob := d.base(old)
		if err := os.Remove(ob + ".json"); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		os.Remove(ob + ".db")
	}
	return nil
}

// List reads every manifest in the directory.
func (d Dir) List(ctx context.Context) ([]Manifest, error) {
	names, err := filepath.Glob(filepath.Join(d.Path, "*.json"))
	if err != nil {
		return nil, err
	}
	var out []Manifest
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			return nil, err
		}
		m, err := decodeManifest(string(b))
		if err != nil {
			continue // not one of ours
		}
		out = append(out, m)
	}
	newestFirst(out)
	return out, nil
}

// Fetch copies m's artefact to dst and verifies it.
func (d Dir) Fetch(ctx context.Context, m Manifest, dst string) error {
	return d.FetchProgress(ctx, m, dst, nil)
}

// FetchProgress is Fetch telling progress (nil: nobody) the bytes copied
// so far and the artefact's size.
func (d Dir) FetchProgress(ctx context.Context, m Manifest, dst string, progress Progress) error {
	if err := copyFile(d.base(m)+".db", dst, &counting{total: m.Size, progress: progress}); err != nil {
		os.Remove(dst)
		return fmt.Errorf("snapshot: fetch %s from %s: %w", m.Name, d.Path, err)
	}
	if err := Verify(dst, m); err != nil {
		os.Remove(dst)
		return err
	}
	return nil
}

// Reached is the highest checkpoint per domain any stored snapshot covers.
func (d Dir) Reached(ctx context.Context) (map[string]uint64, error) {
	ms, err := d.List(ctx)
	if err != nil {
		return nil, err
	}
	return reached(ms), nil
}

// copyFile copies src to dst (owner-only) and syncs it, through count
// when it is not nil (its writer is set to dst).
func copyFile(src, dst string, count *counting) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	var w io.Writer = out
	if count != nil {
		count.w = out
		w = count
	}
	if _, err := io.Copy(w, in); err != nil {
		out.Close()
		return err
	}
	if err := out.Sync(); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
