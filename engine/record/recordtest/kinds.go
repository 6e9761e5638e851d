// Package recordtest holds the rolling-upgrade checks every record
// contract's tests run, for tests only: every record kind a package
// declares has a format-version decision, none past what this build
// reads, and a gate-installing kind stays at version 1.
package recordtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/crewlet/crewlet/engine/record"
)

// DeclaredKinds are the string constants named Kind… declared in the Go
// files of dir (test files aside): the record kinds a package declares.
func DeclaredKinds(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi fs.FileInfo) bool {
		return !strings.HasSuffix(fi.Name(), "_test.go")
	}, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.CONST {
					continue
				}
				for _, spec := range gd.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, name := range vs.Names {
						if !strings.HasPrefix(name.Name, "Kind") || i >= len(vs.Values) {
							continue
						}
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							v, _ := strconv.Unquote(lit.Value)
							out[name.Name] = v
						}
					}
				}
			}
		}
	}
	return out
}

// EveryKindDecided fails for a kind declared in dir that kinds gives no
// format version, a version outside 1..record.FormatVersion, a kinds
// entry no constant declares, and a gate kind above version 1 (a gate
// record stays at 1 for good, growing only by addition).
func EveryKindDecided(t *testing.T, dir string, kinds map[string]int, gateKinds []string) {
	t.Helper()
	declared := DeclaredKinds(t, dir)
	if len(declared) == 0 {
		t.Fatalf("no Kind constant declared in %s", dir)
	}
	seen := map[string]bool{}
	for name, kind := range declared {
		seen[kind] = true
		v, ok := kinds[kind]
		switch {
		case !ok:
			t.Errorf("%s (%q) has no format-version decision: add it to the package's Kinds with the lowest version an older build cannot misapply", name, kind)
		case v < 1 || v > record.FormatVersion:
			t.Errorf("%s (%q) is stamped %d, outside 1..%d", name, kind, v, record.FormatVersion)
		}
	}
	for kind := range kinds {
		if !seen[kind] {
			t.Errorf("Kinds lists %q, which no Kind constant declares", kind)
		}
	}
	for _, g := range gateKinds {
		if kinds[g] != 1 {
			t.Errorf("gate kind %q is stamped %d: a record that installs a gate stays at version 1", g, kinds[g])
		}
	}
}
