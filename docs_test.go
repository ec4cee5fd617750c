package slotted_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The documentation's Go code is compiled: every ```go block of README.md and
// docs/*.md must be preceded, on the line right before it, by
//
//	<!-- compiled: Example_name -->
//
// naming a function of a _test.go file that contains the block's text, with
// whitespace collapsed (so gofmt's alignment does not matter). The function is
// looked for in the root package's _test.go files; "otel/Example_name" looks in
// otel/ instead (modules that the root must not import). Blocks of other
// languages (sql, sh, json) are not checked. docs/README.md says the same for
// writers of the guides.

var compiledMarker = regexp.MustCompile(`^<!-- compiled: ([A-Za-z0-9_/]+) -->$`)

func docFiles(t *testing.T) []string {
	files, err := filepath.Glob("docs/*.md")
	must(t, err)
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	return append([]string{"README.md"}, files...)
}

// testFuncs maps the names of the functions in dir's _test.go files to their
// source text.
func testFuncs(t *testing.T, dir string) map[string]string {
	names, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	must(t, err)
	funcs := map[string]string{}
	fset := token.NewFileSet()
	for _, name := range names {
		src, err := os.ReadFile(name)
		must(t, err)
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		must(t, err)
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil {
				continue
			}
			start, end := fset.Position(fn.Pos()).Offset, fset.Position(fn.End()).Offset
			funcs[fn.Name.Name] = string(src[start:end])
		}
	}
	return funcs
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func normalizeSpace(s string) string { return strings.Join(strings.Fields(s), " ") }

func TestDocsGoBlocksCompile(t *testing.T) {
	funcsByDir := map[string]map[string]string{}
	for _, file := range docFiles(t) {
		src, err := os.ReadFile(file)
		must(t, err)
		lines := strings.Split(string(src), "\n")
		for i := 0; i < len(lines); i++ {
			if !strings.HasPrefix(lines[i], "```") {
				continue
			}
			lang, open := strings.TrimSpace(strings.TrimPrefix(lines[i], "```")), i
			for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			}
			if i == len(lines) {
				t.Fatalf("%s:%d: code block never closed", file, open+1)
			}
			if lang != "go" {
				continue
			}
			block := strings.Join(lines[open+1:i], "\n")
			var m []string
			if open > 0 {
				m = compiledMarker.FindStringSubmatch(lines[open-1])
			}
			if m == nil {
				t.Errorf("%s:%d: a ```go block without <!-- compiled: Example_name --> on the line before it", file, open+1)
				continue
			}
			dir, name := ".", m[1]
			if j := strings.LastIndex(name, "/"); j >= 0 {
				dir, name = name[:j], name[j+1:]
			}
			if funcsByDir[dir] == nil {
				funcsByDir[dir] = testFuncs(t, dir)
			}
			body, ok := funcsByDir[dir][name]
			if !ok {
				t.Errorf("%s:%d: %s names %s, which no _test.go file in %s declares", file, open+1, m[0], name, dir)
				continue
			}
			if !strings.Contains(normalizeSpace(body), normalizeSpace(block)) {
				t.Errorf("%s:%d: the block is not in %s/%s (whitespace aside):\n%s", file, open+1, dir, name, block)
			}
		}
	}
}

var (
	mdLink    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	mdHeading = regexp.MustCompile("^#{1,6} +(.+?) *$")
	notAnchor = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

// anchors returns the heading anchors GitHub gives a Markdown file.
func anchors(t *testing.T, file string) map[string]bool {
	src, err := os.ReadFile(file)
	must(t, err)
	seen, out := map[string]int{}, map[string]bool{}
	fence := false
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "```") {
			fence = !fence
		}
		m := mdHeading.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		a := strings.ReplaceAll(notAnchor.ReplaceAllString(strings.ToLower(m[1]), ""), " ", "-")
		if n := seen[a]; n > 0 {
			out[a+"-"+strconv.Itoa(n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

func TestDocsRelativeLinks(t *testing.T) {
	for _, file := range docFiles(t) {
		src, err := os.ReadFile(file)
		must(t, err)
		fence := false
		for n, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(line, "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				full := file
				if path != "" {
					full = filepath.Join(filepath.Dir(file), path)
				}
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s:%d: link %s: %v", file, n+1, target, err)
					continue
				}
				if anchor != "" && strings.HasSuffix(full, ".md") && !anchors(t, full)[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading #%s", file, n+1, target, full, anchor)
				}
			}
		}
	}
}
