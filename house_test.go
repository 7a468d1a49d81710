package relock_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const (
	module  = "github.com/relock-go/relock"
	goRedis = "github.com/redis/go-redis/v9"
)

// TestHouseRules holds the library's non-test files to the import rules
// ARCHITECTURE.md sets: an internal package never imports a public one
// (the root and tracing, which import nothing of the module, aside), and
// go-redis is spoken by internal/conn alone; a public package names it
// only for the client its constructor takes (redis.UniversalClient).
func TestHouseRules(t *testing.T) {
	checked := 0
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch path {
			case "bench", "tools", "examples", "cmd", "internal/testkit":
				return filepath.SkipDir
			}
			if d.Name() == "testdata" {
				return filepath.SkipDir
			}
			if strings.HasPrefix(d.Name(), ".") && path != "." {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		checked++
		for _, v := range houseViolations(t, path) {
			t.Errorf("%s: %s", path, v)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 50 {
		t.Fatalf("only %d library files found: run from the module root", checked)
	}
}

// houseViolations lists how the file at path breaks the import rules.
func houseViolations(t *testing.T, path string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.ToSlash(filepath.Dir(path))
	internal := strings.HasPrefix(dir, "internal/")
	var out []string
	redisName := ""
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		if p == goRedis {
			redisName = "redis"
			if imp.Name != nil {
				redisName = imp.Name.Name
			}
		}
		rel, ours := strings.CutPrefix(p, module+"/")
		if internal && ours && !strings.HasPrefix(rel, "internal/") && rel != "tracing" {
			out = append(out, "an internal package imports the public package "+p)
		}
	}
	switch {
	case redisName == "" || dir == "internal/conn":
	case internal:
		out = append(out, "imports go-redis, which only internal/conn speaks")
	default:
		ast.Inspect(f, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			if x, ok := sel.X.(*ast.Ident); ok && x.Name == redisName && sel.Sel.Name != "UniversalClient" {
				out = append(out, "uses redis."+sel.Sel.Name+": a public package names go-redis only for its constructor's client")
			}
			return true
		})
	}
	return out
}
