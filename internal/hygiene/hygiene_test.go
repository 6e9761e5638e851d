package hygiene

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/build/constraint"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// pkg is one directory's package as its non-test files declare it.
type pkg struct {
	dir     string          // relative to the module root, slash-separated
	path    string          // import path
	name    string          // package name
	imports map[string]bool // direct imports of the non-test files
	doc     string          // the package comment, if any non-test file has one
	files   int             // non-test files
}

// repo is the module under test, parsed once.
type repo struct {
	root   string
	module string
	pkgs   map[string]*pkg // by import path
}

var loaded *repo

func load(t *testing.T) *repo {
	t.Helper()
	if loaded != nil {
		return loaded
	}
	root, err := moduleRoot()
	if err != nil {
		t.Fatal(err)
	}
	mod, err := modulePath(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	r := &repo{root: root, module: mod, pkgs: map[string]*pkg{}}
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipped(root, p, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly|parser.ParseComments)
		if err != nil {
			return err
		}
		if ignored(f.Comments, f.Package) {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		rel = filepath.ToSlash(rel)
		ip := mod
		if rel != "." {
			ip = mod + "/" + rel
		}
		k := r.pkgs[ip]
		if k == nil {
			k = &pkg{dir: rel, path: ip, name: f.Name.Name, imports: map[string]bool{}}
			r.pkgs[ip] = k
		}
		k.files++
		if f.Doc != nil && k.doc == "" {
			k.doc = f.Doc.Text()
		}
		for _, im := range f.Imports {
			s, _ := strconv.Unquote(im.Path.Value)
			k.imports[s] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	loaded = r
	return r
}

// skipped reports whether the walk from root skips directory p (named
// name): one of skipDir's, or a stream/ at the root, a broker store.
func skipped(root, p, name string) bool {
	return p != root && (skipDir(name) || filepath.Dir(p) == root && name == "stream")
}

// skipDir names directories that hold no packages of the module.
func skipDir(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") ||
		name == "testdata" || name == "vendor" || name == "node_modules" ||
		name == "crewlet-data"
}

// ignored reports whether a file is excluded from every build by a
// //go:build line that needs the "ignore" tag.
func ignored(comments []*ast.CommentGroup, pkgPos token.Pos) bool {
	for _, g := range comments {
		if g.Pos() >= pkgPos {
			break
		}
		for _, c := range g.List {
			if !constraint.IsGoBuild(c.Text) {
				continue
			}
			expr, err := constraint.Parse(c.Text)
			if err != nil {
				continue
			}
			// Every tag but "ignore" counts as set: the union of builds.
			if !expr.Eval(func(tag string) bool { return tag != "ignore" }) {
				return true
			}
		}
	}
	return false
}

func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod above the test's directory")
		}
		dir = parent
	}
}

func modulePath(gomod string) (string, error) {
	b, err := os.ReadFile(gomod)
	if err != nil {
		return "", err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if f := strings.Fields(sc.Text()); len(f) == 2 && f[0] == "module" {
			return strings.Trim(f[1], `"`), nil
		}
	}
	return "", fmt.Errorf("%s names no module", gomod)
}

// under reports whether import path p is q or inside it.
func under(p, q string) bool { return p == q || strings.HasPrefix(p, q+"/") }

// deps is every project package p reaches through non-test imports, each
// with the chain that reaches it.
func (r *repo) deps(p string) map[string][]string {
	out := map[string][]string{}
	var walk func(cur string, chain []string)
	walk = func(cur string, chain []string) {
		k := r.pkgs[cur]
		if k == nil {
			return
		}
		for im := range k.imports {
			if !under(im, r.module) {
				continue
			}
			if _, seen := out[im]; seen {
				continue
			}
			c := append(append([]string(nil), chain...), im)
			out[im] = c
			walk(im, c)
		}
	}
	walk(p, []string{p})
	return out
}

func (r *repo) sortedPkgs() []*pkg {
	var ks []*pkg
	for _, k := range r.pkgs {
		ks = append(ks, k)
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].path < ks[j].path })
	return ks
}

func (r *repo) rel(p string) string {
	if p == r.module {
		return "."
	}
	return strings.TrimPrefix(p, r.module+"/")
}

func (r *repo) chain(c []string) string {
	var parts []string
	for _, p := range c {
		parts = append(parts, r.rel(p))
	}
	return strings.Join(parts, " -> ")
}

// rule is one "package => why" import rule: no package matching from may
// reach a package for which bad reports true.
type rule struct {
	name string
	from func(rel string) bool
	bad  func(rel string, fromRel string) bool
	why  string
}

// domainRoots are the domains' packages; each may hold its record
// contract (a subpackage named …rec) and its apply side (…apply) beside
// its service (the root).
var domainRoots = []string{"engine/tracker", "engine/kb", "engine/pages", "engine/vectors", "engine/usage"}

func isDomain(rel string) bool {
	for _, d := range domainRoots {
		if under(rel, d) {
			return true
		}
	}
	return false
}

// isToolset reports whether rel is a toolset's tools package (a domain's,
// tools/trackertools, or the fleet's): a package under tools/ that is not
// a test helper.
func isToolset(rel string) bool {
	return strings.HasPrefix(rel, "tools/") && !isTestHelper(rel)
}

// isApplySide reports whether rel is a domain's apply side.
func isApplySide(rel string) bool { return isDomain(rel) && strings.HasSuffix(path.Base(rel), "apply") }

// isRecordContract reports whether rel is a domain's record contract.
func isRecordContract(rel string) bool {
	return isDomain(rel) && strings.HasSuffix(path.Base(rel), "rec")
}

// isDomainService reports whether rel is a domain's service: the rest of
// a domain's packages.
func isDomainService(rel string) bool {
	return isDomain(rel) && !isApplySide(rel) && !isRecordContract(rel) && !isTestHelper(rel)
}

// isSurface reports whether rel serves HTTP, REST, the operator or MCP,
// or assembles a node that does.
func isSurface(rel string) bool {
	for _, s := range []string{"engine/rest", "engine/operator", "engine/node", "internal/httpedge", "internal/dashboard", "mcp", "tools", "cmd"} {
		if under(rel, s) {
			return true
		}
	}
	return false
}

func TestImportRules(t *testing.T) {
	r := load(t)
	rules := []rule{
		{
			name: "the tools kit names no domain",
			from: func(rel string) bool { return rel == "tools" },
			bad:  func(rel, _ string) bool { return isDomain(rel) || isToolset(rel) },
			why:  "the kit is what every toolset is built on; each domain's tools are their own package (tools/trackertools, ...), listed by the registry (package domains)",
		},
		{
			name: "engine is below the surfaces",
			from: func(rel string) bool { return under(rel, "engine") },
			bad: func(rel, _ string) bool {
				return under(rel, "tools") || under(rel, "mcp") || under(rel, "cmd")
			},
			why: "the engine knows no surface: operator routes take the MCP handler as an http.Handler",
		},
		{
			name: "statelog knows no domain",
			from: func(rel string) bool { return under(rel, "engine/statelog") },
			bad:  func(rel, _ string) bool { return isDomain(rel) },
			why:  "domains plug into the framework through the Domain interface statelog declares",
		},
		{
			name: "ledger stands on engine alone",
			from: func(rel string) bool { return under(rel, "ledger") },
			bad:  func(rel, _ string) bool { return rel != "engine" && !under(rel, "ledger") },
			why:  "the operation ledger imports nothing of the project but the engine vocabulary",
		},
		{
			name: "engine root is the vocabulary",
			from: func(rel string) bool { return rel == "engine" },
			bad:  func(string, string) bool { return true },
			why:  "package engine imports nothing from the project",
		},
		{
			name: "no production package reaches a test helper",
			from: func(rel string) bool { return !isTestHelper(rel) },
			bad:  func(rel, _ string) bool { return isTestHelper(rel) },
			why:  "test helpers (engine/enginetest, …test packages) are for tests only",
		},
		{
			name: "a domain's apply side knows no service and no surface",
			from: isApplySide,
			bad:  func(rel, _ string) bool { return isDomainService(rel) || isSurface(rel) },
			why:  "the apply side (rows from records) reads alone: its record contract, statelog's domain-facing API and sqlite, never the decide side or an HTTP, REST or operator package",
		},
		{
			name: "a domain's record contract is a leaf",
			from: isRecordContract,
			bad:  func(rel, _ string) bool { return rel != "engine" },
			why:  "the record contract (kinds, payloads, subjects, scopes) is read by both sides and stands on the engine vocabulary alone",
		},
	}
	matched := make([]int, len(rules))
	for _, k := range r.sortedPkgs() {
		rel := r.rel(k.path)
		reach := r.deps(k.path)
		for i, ru := range rules {
			if !ru.from(rel) {
				continue
			}
			matched[i]++
			for dep, c := range reach {
				if ru.bad(r.rel(dep), rel) {
					t.Errorf("%s: %s (%s)", ru.name, r.chain(c), ru.why)
				}
			}
		}
		if !isTestHelper(rel) && k.imports["testing"] {
			t.Errorf("%s imports \"testing\" outside a _test.go file: production code must not", rel)
		}
	}
	for i, ru := range rules {
		if matched[i] == 0 {
			t.Errorf("%s: no package it applies to (a moved or renamed layer must take its rule along)", ru.name)
		}
	}
}

// directRule is a rule on what a package names in its own imports,
// standard library and third-party modules included: what a layer may
// know itself, whatever the packages it names stand on (mcp reaches the
// broker through tools and the engine, as it must, but never names it).
type directRule struct {
	name string
	from func(rel string) bool
	// bad is given the full import path.
	bad func(imp string) bool
	why string
}

// isNATSOrSQL reports whether import path imp is a NATS client or server,
// or SQL: the broker's and the store's own vocabularies.
func isNATSOrSQL(imp string) bool {
	return strings.HasPrefix(imp, "github.com/nats-io/") || under(imp, "database/sql") || under(imp, "modernc.org/sqlite")
}

func TestDirectImports(t *testing.T) {
	r := load(t)
	engine := r.module + "/engine"
	rules := []directRule{
		{
			name: "mcp names no engine internal",
			from: func(rel string) bool { return under(rel, "mcp") },
			bad:  func(imp string) bool { return under(imp, engine) && imp != engine || isNATSOrSQL(imp) },
			why:  "mcp knows tools and the engine's vocabulary (package engine), never an engine subpackage, NATS or SQL; cmd wires engine parts in through mcp's interfaces",
		},
		{
			name: "cmd names no domain",
			from: func(rel string) bool { return under(rel, "cmd") },
			bad: func(imp string) bool {
				rel := strings.TrimPrefix(imp, r.module+"/")
				return under(imp, r.module) && (isDomain(rel) || isToolset(rel))
			},
			why: "the domains a build runs are the registry's (package domains) and reach the surfaces through package surfaces: adding a domain touches no command",
		},
		{
			name: "tools names no broker or store",
			from: func(rel string) bool { return under(rel, "tools") },
			bad: func(imp string) bool {
				return under(imp, engine+"/broker") || under(imp, engine+"/sqlite") || isNATSOrSQL(imp)
			},
			why: "tools knows the engine's API, never NATS or SQL",
		},
		{
			name: "a domain's apply side speaks no HTTP",
			from: isApplySide,
			bad:  func(imp string) bool { return under(imp, "net/http") },
			why:  "the apply side writes rows from records; HTTP is the surfaces'",
		},
	}
	for _, ru := range rules {
		matched := 0
		for _, k := range r.sortedPkgs() {
			rel := r.rel(k.path)
			if !ru.from(rel) {
				continue
			}
			matched++
			var imps []string
			for imp := range k.imports {
				imps = append(imps, imp)
			}
			sort.Strings(imps)
			for _, imp := range imps {
				if ru.bad(imp) {
					t.Errorf("%s: %s imports %s (%s)", ru.name, rel, imp, ru.why)
				}
			}
		}
		// A rule that matches no package guards nothing: a moved or
		// renamed layer must take its rule along.
		if matched == 0 {
			t.Errorf("%s: no package it applies to", ru.name)
		}
	}
}

// isTestHelper reports whether a package exists only for tests: by Go
// convention its name ends in "test" (enginetest, like net/http/httptest).
func isTestHelper(rel string) bool {
	return strings.HasSuffix(path.Base(rel), "test") && rel != "."
}

func TestPackageDocs(t *testing.T) {
	r := load(t)
	for _, k := range r.sortedPkgs() {
		rel := r.rel(k.path)
		doc := strings.TrimSpace(k.doc)
		switch {
		case doc == "":
			t.Errorf("%s: no package comment: add \"// Package %s ...\" (a doc.go is the usual place)", rel, k.name)
		case k.name == "main":
			if !strings.HasPrefix(doc, "Command ") && !strings.HasPrefix(doc, "Package main") {
				t.Errorf("%s: a command's comment starts \"Command <name> ...\": %q", rel, firstLine(doc))
			}
		case !strings.HasPrefix(doc, "Package "+k.name+" ") && !strings.HasPrefix(doc, "Package "+k.name+"\n"):
			t.Errorf("%s: package comment does not start \"Package %s \": %q", rel, k.name, firstLine(doc))
		}
	}
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// machinePath finds an absolute path of some machine's home or work tree.
// The alternatives are split so this file does not match itself.
var machinePath = regexp.MustCompile(`(^|[^A-Za-z0-9_.~-])/(` + "wo" + `rk|ro` + `ot|ho` + `me|Us` + `ers)/`)

func TestNoMachinePaths(t *testing.T) {
	r := load(t)
	files, err := sourceFiles(r.root)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !strings.HasSuffix(f, ".go") && !strings.HasSuffix(f, ".md") {
			continue
		}
		if f == "internal/hygiene/hygiene_test.go" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(f)))
		if err != nil {
			if os.IsNotExist(err) {
				continue // deleted in the work tree
			}
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			if m := machinePath.FindString(line); m != "" {
				t.Errorf("%s:%d: machine-specific absolute path %q: use a relative path, t.TempDir() or a placeholder", f, i+1, strings.TrimSpace(m))
			}
		}
	}
}

// sourceFiles lists the files git tracks or would track (untracked but not
// ignored), relative and slash-separated; without git, a walk of the tree.
func sourceFiles(root string) ([]string, error) {
	cmd := exec.Command("git", "ls-files", "--cached", "--others", "--exclude-standard")
	cmd.Dir = root
	if out, err := cmd.Output(); err == nil {
		var files []string
		for _, l := range strings.Split(string(out), "\n") {
			if l = strings.TrimSpace(l); l != "" {
				files = append(files, l)
			}
		}
		return files, nil
	}
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "crewlet-data" || d.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	return files, err
}
