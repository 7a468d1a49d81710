package doccheck

import (
	"go/ast"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// codeName is a name in backticks that reads as pkg.Name or
// pkg.Type.Method, with an optional call: `core.Acquire`, `conn.Pool.Bound`.
var codeName = regexp.MustCompile("`([a-z][a-z0-9]*)\\.([A-Za-z_][A-Za-z0-9_]*)(?:\\.([A-Za-z_][A-Za-z0-9_]*))?(?:\\([^`]*\\))?`")

// StaleNames returns the names in backticks of the Markdown file md that
// point into a package of the module rooted at root (a top-level
// directory, or one under internal/) and that the package no longer
// declares: a renamed function, a moved type, a method gone. A name of
// any other package (`redis.Client`) is not checked.
func StaleNames(root, md string) ([]string, error) {
	text, err := os.ReadFile(md)
	if err != nil {
		return nil, err
	}
	decls := map[string]map[string]bool{} // package dir -> declared names
	var out []string
	for _, m := range codeName.FindAllStringSubmatch(string(text), -1) {
		dir := packageDir(root, m[1])
		if dir == "" {
			continue
		}
		if decls[dir] == nil {
			if decls[dir], err = declared(dir); err != nil {
				return nil, err
			}
		}
		name := m[2]
		if m[3] != "" {
			name += "." + m[3]
		}
		if !decls[dir][name] {
			out = append(out, strings.Trim(m[0], "`"))
		}
	}
	sort.Strings(out)
	return out, nil
}

// packageDir is the directory of the module's package called pkg, "" for
// none.
func packageDir(root, pkg string) string {
	for _, dir := range []string{filepath.Join(root, pkg), filepath.Join(root, "internal", pkg)} {
		if fi, err := os.Stat(dir); err == nil && fi.IsDir() {
			return dir
		}
	}
	return ""
}

// declared returns the top-level names of the non-test files in dir, and
// Type.Method for each method, exported or not.
func declared(dir string) (map[string]bool, error) {
	fset := token.NewFileSet()
	pkgs, err := parseDir(fset, dir, func(name string) bool { return !strings.HasSuffix(name, "_test.go") })
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for _, files := range pkgs {
		for _, f := range files {
			for _, d := range f.Decls {
				addDecl(names, d)
			}
		}
	}
	return names, nil
}

func addDecl(names map[string]bool, d ast.Decl) {
	switch d := d.(type) {
	case *ast.FuncDecl:
		if d.Recv == nil || len(d.Recv.List) == 0 {
			names[d.Name.Name] = true
			return
		}
		names[receiverType(d.Recv.List[0].Type)+"."+d.Name.Name] = true
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				names[s.Name.Name] = true
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names[n.Name] = true
				}
			}
		}
	}
}

// receiverType is the name of a method's receiver type: T for T, *T, T[P].
func receiverType(e ast.Expr) string {
	for {
		switch t := e.(type) {
		case *ast.StarExpr:
			e = t.X
		case *ast.IndexExpr:
			e = t.X
		case *ast.IndexListExpr:
			e = t.X
		case *ast.Ident:
			return t.Name
		default:
			return ""
		}
	}
}
