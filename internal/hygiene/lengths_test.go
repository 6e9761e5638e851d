package hygiene

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// The size limits every Go file of the module keeps, tests included: a
// file is read whole, a function at one sitting. Past them a file wants
// splitting by concern and a function into named phases (a test into
// subtests or named steps); there is no allow-list.
const (
	maxFileLines = 800
	maxFuncLines = 80
)

// goFiles lists every .go file of the module, test files and files
// excluded by build constraints included, relative and slash-separated,
// skipping the directories load skips.
func goFiles(root string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skipped(root, p, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(p, ".go") {
			rel, _ := filepath.Rel(root, p)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	sort.Strings(files)
	return files, err
}

// lineCount is the number of lines of a file's text, a last line without
// its newline included (what wc -l reports for a file that ends in one).
func lineCount(b []byte) int {
	n := bytes.Count(b, []byte("\n"))
	if len(b) > 0 && b[len(b)-1] != '\n' {
		n++
	}
	return n
}

// TestLengths: no .go file of the module is over maxFileLines lines and no
// function over maxFuncLines, each offender named with its length.
func TestLengths(t *testing.T) {
	r := load(t)
	files, err := goFiles(r.root)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no .go file found under the module root")
	}
	fset := token.NewFileSet()
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(r.root, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		over, err := overLimits(fset, f, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range over {
			t.Error(o)
		}
	}
}

// overLimits names what in one file is over the limits: the file itself,
// then each function (method and test function alike) in file order, each
// with its length.
func overLimits(fset *token.FileSet, name string, src []byte) ([]string, error) {
	var out []string
	if n := lineCount(src); n > maxFileLines {
		out = append(out, fmt.Sprintf("%s: %d lines, over the %d-line limit: split it into files by concern", name, n, maxFileLines))
	}
	af, err := parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
	if err != nil {
		return nil, err
	}
	for _, d := range af.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok {
			continue
		}
		// From the func keyword (a doc comment does not count) to the
		// closing brace, both lines included.
		start := fset.Position(fn.Pos()).Line
		n := fset.Position(fn.End()).Line - start + 1
		if n > maxFuncLines {
			out = append(out, fmt.Sprintf("%s:%d: func %s: %d lines, over the %d-line limit: split it into named phases (a test into subtests or helpers)", name, start, funcName(fn), n, maxFuncLines))
		}
	}
	return out, nil
}

// TestLengthsCounting holds the counting to its rule on a made-up file:
// a function of exactly the limit passes, one line more fails, a doc
// comment is not counted, a method is named with its receiver, and a
// file one line over its limit is named too.
func TestLengthsCounting(t *testing.T) {
	body := func(lines int) string { // a func of that many lines, func to brace
		return " {\n" + strings.Repeat("\t_ = 0\n", lines-2) + "}\n"
	}
	var src strings.Builder
	src.WriteString("package p\n\ntype T struct{}\n\n")
	src.WriteString("// A doc comment of\n// three lines\n// is not counted.\n")
	src.WriteString("func atLimit()" + body(maxFuncLines) + "\n")
	overAt := strings.Count(src.String(), "\n") + 1 // the line its func keyword is on
	src.WriteString("func (*T) over()" + body(maxFuncLines+1) + "\n")
	for lineCount([]byte(src.String())) < maxFileLines+1 {
		src.WriteString("\n")
	}
	got, err := overLimits(token.NewFileSet(), "p.go", []byte(src.String()))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("p.go: %d lines, over the %d-line limit: split it into files by concern", maxFileLines+1, maxFileLines),
		fmt.Sprintf("p.go:%d: func (*T).over: %d lines, over the %d-line limit: split it into named phases (a test into subtests or helpers)", overAt, maxFuncLines+1, maxFuncLines),
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("overLimits named\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// funcName is a function's name as a reader looks for it: a method with
// its receiver type, (*T).M or T.M.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	typ := fn.Recv.List[0].Type
	star := ""
	if s, ok := typ.(*ast.StarExpr); ok {
		star, typ = "*", s.X
	}
	switch x := typ.(type) {
	case *ast.IndexExpr:
		typ = x.X
	case *ast.IndexListExpr:
		typ = x.X
	}
	name := "?"
	if id, ok := typ.(*ast.Ident); ok {
		name = id.Name
	}
	if star != "" {
		return "(" + star + name + ")." + fn.Name.Name
	}
	return name + "." + fn.Name.Name
}
