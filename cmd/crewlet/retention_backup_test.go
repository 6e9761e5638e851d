//go:build integration

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestRetentionBackupVerifyRestore: against a real `crewlet serve` whose
// config names retention.snapshot_dir, `crewlet retention backup` prints
// its progress and the snapshot it took (the artefact is in the
// directory), and `crewlet retention verify-restore` restores it and finds
// it equal to the live copy; a corrupt artefact fails verify-restore.
func TestRetentionBackupVerifyRestore(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "snapshots")
	cfg := writeConfig(t, "retention: {snapshot_dir: "+dir+", backup_interval: \"off\"}\n")
	s := StartServe(t, filepath.Join(t.TempDir(), "data"), "--config", cfg)
	c := s.HTTPClient(t)
	callRetry(t, c, "create_project", map[string]any{"key": "ENG", "name": "Engineering"})
	for _, title := range []string{"one", "two", "three"} {
		callRetry(t, c, "create_work_item", map[string]any{"project": "ENG", "title": title})
	}
	bin := BuildBinary(t)
	run := func(sub string) (string, string, error) {
		cmd := exec.Command(bin, "retention", sub, "--node", s.BaseURL, "--token-file", s.TokenFile)
		var out, errb strings.Builder
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		return out.String(), errb.String(), err
	}
	out, progress, err := run("backup")
	if err != nil {
		t.Fatalf("backup: %v\n%s%s", err, out, progress)
	}
	if !strings.Contains(progress, "(100%)") || !strings.Contains(out, "sha256 ") || !strings.Contains(out, "tracker: CREWLET_TRACKER_LOG GEN 1 seq ") {
		t.Fatalf("backup printed\n%s\nand on stderr\n%s", out, progress)
	}
	arts, _ := filepath.Glob(filepath.Join(dir, "*.db"))
	if len(arts) != 1 {
		t.Fatalf("artefacts in retention.snapshot_dir: %v", arts)
	}
	out, _, err = run("verify-restore")
	if err != nil || !strings.HasSuffix(out, "ok\n") || !strings.Contains(out, "integrity ok") {
		t.Fatalf("verify-restore: %v\n%s", err, out)
	}
	corrupt(t, arts[0])
	_, stderr, err := run("verify-restore")
	if err == nil || !strings.Contains(stderr, "is corrupt") {
		t.Fatalf("verify-restore of a corrupt artefact: %v\n%s", err, stderr)
	}
}

// corrupt flips one byte in the middle of the file at path.
func corrupt(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)/2] ^= 0xff
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}
