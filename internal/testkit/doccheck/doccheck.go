package doccheck

import (
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Undocumented parses the Go packages under root (skipping testdata,
// hidden directories, and the directories in skip, relative to root) and
// returns "dir: identifier" for every exported identifier without a doc
// comment, and "dir: package comment" for a package without one. A
// constant or variable in a documented group counts as documented, as
// `go doc` shows the group's comment with it.
func Undocumented(root string, skip ...string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		name := d.Name()
		if path != root && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		for _, s := range skip {
			if rel == s {
				return filepath.SkipDir
			}
		}
		missing, err := undocumentedIn(path)
		if err != nil {
			return err
		}
		for _, m := range missing {
			out = append(out, rel+": "+m)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

func undocumentedIn(dir string) ([]string, error) {
	fset := token.NewFileSet()
	pkgs, err := parseDir(fset, dir, func(name string) bool {
		return !strings.HasSuffix(name, "_test.go")
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, files := range pkgs {
		p, err := doc.NewFromFiles(fset, files, "example.com/"+filepath.ToSlash(dir))
		if err != nil {
			return nil, err
		}
		if strings.TrimSpace(p.Doc) == "" {
			out = append(out, "package comment")
		}
		if p.Name == "main" {
			continue // a command documents itself in its package comment
		}
		out = append(out, values(p.Consts)...)
		out = append(out, values(p.Vars)...)
		for _, f := range p.Funcs {
			if f.Doc == "" {
				out = append(out, f.Name)
			}
		}
		for _, t := range p.Types {
			if t.Doc == "" {
				out = append(out, t.Name)
			}
			out = append(out, values(t.Consts)...)
			out = append(out, values(t.Vars)...)
			for _, f := range t.Funcs {
				if f.Doc == "" {
					out = append(out, f.Name)
				}
			}
			for _, m := range t.Methods {
				if m.Doc == "" {
					out = append(out, fmt.Sprintf("%s.%s", t.Name, m.Name))
				}
			}
		}
	}
	return out, nil
}

// parseDir parses, with their comments, the .go files of dir (not of its
// subdirectories) whose name keep accepts, and groups them by package
// name, as go/parser's ParseDir did. The first file that fails to parse
// fails it all.
func parseDir(fset *token.FileSet, dir string, keep func(name string) bool) (map[string][]*ast.File, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	pkgs := make(map[string][]*ast.File)
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || !keep(e.Name()) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		pkgs[f.Name.Name] = append(pkgs[f.Name.Name], f)
	}
	return pkgs, nil
}

// values reports the undocumented names of const or var groups: a name is
// documented by its group's comment, or its own (doc or line comment).
func values(vs []*doc.Value) []string {
	var out []string
	for _, v := range vs {
		if v.Doc != "" {
			continue
		}
		for _, spec := range v.Decl.Specs {
			vs := spec.(*ast.ValueSpec)
			if vs.Doc != nil || vs.Comment != nil {
				continue
			}
			for _, n := range vs.Names {
				if n.IsExported() {
					out = append(out, n.Name)
				}
			}
		}
	}
	return out
}
