package doccheck_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/relock-go/relock/internal/testkit/doccheck"
)

func Example() {
	dir, _ := os.MkdirTemp("", "doccheck")
	defer os.RemoveAll(dir)
	_ = os.WriteFile(filepath.Join(dir, "p.go"), []byte("// Package p is documented.\npackage p\n\nfunc Exported() {}\n"), 0o644)
	missing, err := doccheck.Undocumented(dir)
	fmt.Println(missing, err)
	// Output: [.: Exported] <nil>
}
