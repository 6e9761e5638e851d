package tools_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/crewlet/crewlet/engine/kb"
	"github.com/crewlet/crewlet/engine/node"
	"github.com/crewlet/crewlet/engine/statelog"
	"github.com/crewlet/crewlet/engine/tracker"
	"github.com/crewlet/crewlet/engine/usage"
	"github.com/crewlet/crewlet/tools"
)

// TestToolSnaps compares every tool's definition, on both surfaces, with
// its snapshot in __toolsnaps__ (the seat's under __toolsnaps__/seat);
// UPDATE_TOOLSNAPS=true rewrites them. A missing snapshot fails, and so
// does a snapshot no tool has any more.
func TestToolSnaps(t *testing.T) {
	update := os.Getenv("UPDATE_TOOLSNAPS") == "true"
	for _, surface := range []struct {
		deps surface
		dir  string
	}{{surface{tools.Operator, catalogueOf((*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*usage.Service)(nil))}, "__toolsnaps__"}, {surface{tools.Seat, catalogueOf((*tracker.Service)(nil), (*kb.Service)(nil), (*statelog.NodeGates)(nil), (*node.Node)(nil))}, filepath.Join("__toolsnaps__", "seat")}} {
		seen := map[string]bool{}
		for _, st := range surface.deps.set() {
			path := filepath.Join(surface.dir, st.Tool.Name+".snap")
			seen[path] = true
			t.Run(string(surface.deps.Surface)+"/"+st.Tool.Name, func(t *testing.T) {
				raw, err := json.Marshal(st.Tool)
				if err != nil {
					t.Fatal(err)
				}
				var got bytes.Buffer
				if err := json.Indent(&got, raw, "", "  "); err != nil {
					t.Fatal(err)
				}
				got.WriteByte('\n')
				if update {
					if err := os.MkdirAll(surface.dir, 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("no snapshot for %s (%v): run UPDATE_TOOLSNAPS=true go test ./tools/ and review the diff", st.Tool.Name, err)
				}
				if !bytes.Equal(normalize(want), normalize(got.Bytes())) {
					t.Fatalf("tool %s differs from %s; if the change is intended, run UPDATE_TOOLSNAPS=true go test ./tools/\ngot:\n%s", st.Tool.Name, path, got.String())
				}
			})
		}
		files, err := filepath.Glob(filepath.Join(surface.dir, "*.snap"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if seen[f] {
				continue
			}
			if update {
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
				continue
			}
			t.Errorf("snapshot %s belongs to no %s tool: delete it (UPDATE_TOOLSNAPS=true does)", f, surface.deps.Surface)
		}
	}
}

// normalize re-encodes JSON so formatting differences do not count.
func normalize(b []byte) []byte {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return b
	}
	out, _ := json.Marshal(v)
	return out
}
