package fence_test

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// drivers are the database drivers the tests use (in tools/fencecheck and
// examples/fencing, modules of their own) and their common peers.
var drivers = []string{"modernc.org/sqlite", "github.com/jackc/pgx", "github.com/lib/pq", "github.com/go-sql-driver/mysql", "github.com/mattn/go-sqlite3"}

// The library's go.mod names no database driver, so an importer of relock
// gets none in its build; and package fence imports no internal package.
func TestNoDriverNoInternal(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range drivers {
		if strings.Contains(string(mod), d) {
			t.Errorf("go.mod requires the driver %s: it belongs in tools/ or examples/fencing", d)
		}
	}
	files, _ := filepath.Glob("*.go")
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.Contains(p, "/internal/") || strings.HasSuffix(p, "/internal") {
				t.Errorf("%s imports %s", f, p)
			}
			for _, d := range drivers {
				if strings.HasPrefix(p, d) {
					t.Errorf("%s imports the driver %s", f, p)
				}
			}
		}
	}
}
