package doccheck_test

import (
	"strings"
	"testing"

	"github.com/relock-go/relock/internal/testkit/doccheck"
)

// TestEveryExportedIdentifierIsDocumented is the `go doc` check: no
// exported identifier of the module (public and internal packages, the
// bench module aside) may lack a doc comment.
func TestEveryExportedIdentifierIsDocumented(t *testing.T) {
	missing, err := doccheck.Undocumented("../../..", "bench")
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("%d exported identifiers without a doc comment:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}

// The checker finds what it should: this package's own testdata has an
// undocumented function, type, method, constant and package.
func TestUndocumentedFindsGaps(t *testing.T) {
	missing, err := doccheck.Undocumented("testdata/gaps")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".: C", ".: F", ".: T", ".: T.M", ".: package comment"}
	if strings.Join(missing, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", missing, want)
	}
}
