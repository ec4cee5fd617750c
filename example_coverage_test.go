package slotted_test

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryEntryPointHasAnExample keeps example_test.go complete: every
// exported function, and the types and methods users start from, have an
// Example beside them on pkg.go.dev.
func TestEveryEntryPointHasAnExample(t *testing.T) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, name := range names {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/slotted-go/slotted")
	if err != nil {
		t.Fatal(err)
	}
	// Diagnose belongs to its own package's examples.
	skip := func(name string) bool { return strings.HasPrefix(name, "Diagnose") }
	wantTypes := map[string]bool{"Config": true, "Ref": true, "Runner": true, "SlottedCounter": true, "CacheOptions": true, "OnceOptions": true}
	wantMethods := map[string]bool{"Plugin.Config": true, "Plugin.Stats": true, "Runner.Run": true}
	check := func(what string, examples []*doc.Example) {
		if len(examples) == 0 {
			t.Errorf("%s has no Example in example_test.go", what)
		}
	}
	funcs := pkg.Funcs
	for _, typ := range pkg.Types {
		funcs = append(funcs, typ.Funcs...)
		if wantTypes[typ.Name] {
			check("type "+typ.Name, typ.Examples)
		}
		for _, m := range typ.Methods {
			if wantMethods[typ.Name+"."+m.Name] {
				check(typ.Name+"."+m.Name, m.Examples)
			}
		}
	}
	for _, f := range funcs {
		if !skip(f.Name) {
			check("func "+f.Name, f.Examples)
		}
	}
	if len(funcs) < 20 {
		t.Fatalf("found only %d functions: the package was not parsed", len(funcs))
	}
}
