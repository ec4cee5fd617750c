package tests

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestEveryEntryPointHasARunnableExample keeps example_test.go complete: every
// exported function of the root package, and the types and methods users
// start from, have a verified Example_<name> here (the root package's own
// examples, beside each function on pkg.go.dev, are compiled but not run).
func TestEveryEntryPointHasARunnableExample(t *testing.T) {
	want := map[string]bool{"Config": true, "Ref": true, "Runner": true, "PluginConfig": true, "PluginStats": true}
	files, err := filepath.Glob("../*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			// Diagnose belongs to its own package's examples.
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && fn.Name.IsExported() && !strings.HasPrefix(fn.Name.Name, "Diagnose") {
				want[fn.Name.Name] = true
			}
		}
	}
	if len(want) < 25 {
		t.Fatalf("found only %d entry points: the root package was not parsed", len(want))
	}
	// Covered: an Example_<name>, or a runnable example (one with an Output
	// comment, in any test file here) that calls slotted.<name>.
	tests, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, name := range tests {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || !strings.HasPrefix(fn.Name.Name, "Example") || fn.Body == nil {
				continue
			}
			have[fn.Name.Name] = true
			if !hasOutput(f, fn) {
				continue
			}
			ast.Inspect(fn.Body, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if x, ok := sel.X.(*ast.Ident); ok && x.Name == "slotted" {
						have[sel.Sel.Name] = true
					}
				}
				return true
			})
		}
	}
	for name := range want {
		r, size := utf8.DecodeRuneInString(name)
		example := "Example_" + string(unicode.ToLower(r)) + name[size:]
		if !have[example] && !have[name] {
			t.Errorf("%s has no runnable example: add %s to example_test.go", name, example)
		}
	}
}

// hasOutput reports whether the example function has an "// Output:" comment,
// so go test runs and checks it.
func hasOutput(f *ast.File, fn *ast.FuncDecl) bool {
	for _, c := range f.Comments {
		if c.Pos() > fn.Body.Lbrace && c.End() < fn.Body.Rbrace && strings.Contains(c.Text(), "Output:") {
			return true
		}
	}
	return false
}
