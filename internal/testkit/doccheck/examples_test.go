package doccheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/relock-go/relock/internal/testkit/doccheck"
)

// publicPackages are the packages whose entry points pkg.go.dev shows.
var publicPackages = []string{".", "lock", "rwlock", "semaphore", "redlock", "election", "watchdog", "tracing", "fence"}

// TestEveryEntryPointHasAnExample: every exported
// function and method of the public packages has an Example, which
// pkg.go.dev shows beside it and `go test` runs.
func TestEveryEntryPointHasAnExample(t *testing.T) {
	var missing []string
	for _, pkg := range publicPackages {
		names, err := doccheck.WithoutExample(filepath.Join("../../..", pkg), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			missing = append(missing, pkg+"."+n)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d exported functions and methods without an Example:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// The checker finds what it should: a function, a constructor and a
// method without an Example, and not those that have one (in package p
// or p_test, with or without a suffix).
func TestWithoutExampleFindsGaps(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"p.go": `// Package p is documented.
package p

// T is a type.
type T struct{}

// New returns a T.
func New() *T { return nil }

// NewOther returns a T too.
func NewOther() *T { return nil }

// M is a method.
func (*T) M() {}

// N is a method.
func (*T) N() {}

// F is a function.
func F() {}

// G is a function.
func G() {}

// Skipped is left out by the skip func.
func Skipped() {}

func (*T) unexported() {}
`,
		"example_test.go": `package p_test

func ExampleNew()       {}
func ExampleT_N_reuse() {}
func ExampleF()         {}
`,
		"internal_test.go": `package p

func ExampleG() {}
`,
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	missing, err := doccheck.WithoutExample(dir, func(name string) bool { return name == "Skipped" })
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"NewOther", "T.M"}
	if strings.Join(missing, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", missing, want)
	}
}
