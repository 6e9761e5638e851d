package token

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine"
)

// TestOperator: generated on first boot (32 bytes of hex, 0600), reused
// on the next, and a configured one wins.
func TestOperator(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	tok, src, err := Operator("", dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(tok) != 64 || strings.Trim(tok, "0123456789abcdef") != "" {
		t.Fatalf("token %q is not 32 bytes of hex", tok)
	}
	if src != filepath.Join(dir, FileName) {
		t.Fatalf("source = %q", src)
	}
	fi, err := os.Stat(src)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	again, _, err := Operator("", dir)
	if err != nil || again != tok {
		t.Fatalf("second boot token %q, %v; want the first %q", again, err, tok)
	}
	cfg, src, err := Operator("configured-token-123", dir)
	if err != nil || cfg != "configured-token-123" || !strings.Contains(src, "operator.token") {
		t.Fatalf("configured: %q %q %v", cfg, src, err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(" \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := Operator("", dir); err == nil || !strings.Contains(err.Error(), "delete it to have a new one generated") {
		t.Fatalf("empty token file: %v", err)
	}
}

func TestCheck(t *testing.T) {
	for _, ok := range []string{"", "0123456789abcdef", strings.Repeat("x", 64)} {
		if err := Check(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"abc", "0123456789abcdef 0123", "0123456789abcdef\n"} {
		err := Check(bad)
		var ce *engine.ConfigError
		if !errors.As(err, &ce) || ce.Field != "operator.token" {
			t.Errorf("%q: %v, want a ConfigError on operator.token", bad, err)
		}
		if strings.Contains(err.Error(), bad) {
			t.Errorf("the refusal echoes the secret: %v", err)
		}
	}
}

// TestFind: a named file first, then the environment, then the data
// directory; files are trimmed, and an empty or missing one says which.
func TestFind(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tok")
	if err := os.WriteFile(file, []byte("from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte("from-data\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const env = "CREWLET_TOKEN_TEST_FIND"
	t.Setenv(env, " from-env ")
	for _, tt := range []struct {
		file, env, dataDir string
		want               string
		found              bool
	}{
		{file, env, dir, "from-file", true},
		{"", env, dir, "from-env", true},
		{"", "", dir, "from-data", true},
		{"", "CREWLET_TOKEN_TEST_UNSET", dir, "from-data", true},
		{"", "", "", "", false},
	} {
		got, found, err := Find(tt.file, tt.env, tt.dataDir)
		if err != nil || got != tt.want || found != tt.found {
			t.Errorf("Find(%q, %q, %q) = %q, %v, %v; want %q, %v", tt.file, tt.env, tt.dataDir, got, found, err, tt.want, tt.found)
		}
	}

	empty := filepath.Join(dir, "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var fe *FileError
	if _, found, err := Find(empty, env, ""); found || !errors.As(err, &fe) || !errors.Is(err, ErrEmpty) || fe.Path != empty {
		t.Errorf("empty file: found %v, %v", found, err)
	}
	missing := filepath.Join(dir, "missing")
	if _, _, err := Find(missing, "", ""); !errors.As(err, &fe) || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, _, err := Find("", "", t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("data directory without a token: %v", err)
	}
}
