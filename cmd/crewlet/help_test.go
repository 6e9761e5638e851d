package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelpExitsZero: every command's -h prints its flags to stderr and
// exits 0, as a program on Go's flag package alone does; no command at
// all, an unknown flag or an unknown command is a usage mistake (2).
func TestHelpExitsZero(t *testing.T) {
	asks := [][]string{
		{"help"}, {"-h"}, {"--help"},
		{"serve", "-h"}, {"serve", "--help"}, {"mcp", "-h"}, {"validate", "-h"}, {"bench", "-h"},
		{"retention", "-h"},
	}
	for name := range retentionSubcommands {
		asks = append(asks, []string{"retention", name, "-h"})
	}
	for _, args := range asks {
		code, stderr := runMain(t, args)
		if code != 0 {
			t.Errorf("crewlet %s exits %d, want 0; stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
		if !strings.Contains(stderr, "Usage") {
			t.Errorf("crewlet %s printed no usage on stderr:\n%s", strings.Join(args, " "), stderr)
		}
	}
	for _, args := range [][]string{{}, {"serve", "--no-such-flag"}, {"no-such-command"}, {"retention", "status", "--no-such-flag"}} {
		if code, stderr := runMain(t, args); code != 2 {
			t.Errorf("crewlet %s exits %d, want 2 (a usage mistake); stderr:\n%s", strings.Join(args, " "), code, stderr)
		}
	}
}

// runMain runs crewlet args in process, on files in place of the
// process's streams, and returns its exit code and what it wrote on stderr.
func runMain(t *testing.T, args []string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	m := &Main{Stdin: open("stdin"), Stdout: open("stdout"), Stderr: open("stderr")}
	code := m.ExitCode(m.Run(context.Background(), args))
	b, err := os.ReadFile(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}
