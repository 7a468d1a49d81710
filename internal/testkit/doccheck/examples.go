package doccheck

import (
	"go/ast"
	"go/doc"
	"go/token"
	"path/filepath"
	"sort"
)

// WithoutExample parses the package in dir together with its _test.go
// files (package p and p_test) and returns, sorted, every exported
// function ("New") and every exported method of an exported type
// ("Mutex.Lock") that has no Example attached, as `go doc` and pkg.go.dev
// attach them: ExampleNew, ExampleMutex_Lock, or those with a lower-case
// suffix (ExampleNew_cluster). Functions that go/doc lists under a type,
// such as constructors and options returning it, count as functions. A
// name for which skip (when not nil) reports true is left out.
func WithoutExample(dir string, skip func(name string) bool) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parseDir(fset, dir, func(string) bool { return true })
	if err != nil {
		return nil, err
	}
	var files []*ast.File
	for _, pkg := range pkgs {
		files = append(files, pkg...)
	}
	p, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.ToSlash(dir))
	if err != nil {
		return nil, err
	}
	var out []string
	check := func(name string, examples []*doc.Example) {
		if len(examples) == 0 && (skip == nil || !skip(name)) {
			out = append(out, name)
		}
	}
	for _, f := range p.Funcs {
		check(f.Name, f.Examples)
	}
	for _, t := range p.Types {
		for _, f := range t.Funcs {
			check(f.Name, f.Examples)
		}
		for _, m := range t.Methods {
			check(t.Name+"."+m.Name, m.Examples)
		}
	}
	sort.Strings(out)
	return out, nil
}
