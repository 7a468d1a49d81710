package doccheck_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/doccheck"
)

// ARCHITECTURE.md names the code it maps: every such name must still be
// declared where it says, or a reader following it is sent astray.
func TestArchitectureNamesExist(t *testing.T) {
	stale, err := doccheck.StaleNames("../../..", "../../../ARCHITECTURE.md")
	require.NoError(t, err)
	if len(stale) > 0 {
		t.Errorf("ARCHITECTURE.md names %d identifiers that are not declared:\n%s", len(stale), strings.Join(stale, "\n"))
	}
}

// The checker finds a name that is gone and passes one that exists, a
// method, a call and another module's name.
func TestStaleNamesFindsGaps(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "internal", "p"), 0o755))
	src := "package p\n\ntype T struct{}\n\nfunc (*T) M() {}\n\nfunc F() {}\n\nvar v int\n"
	require.NoError(t, os.WriteFile(filepath.Join(dir, "internal", "p", "p.go"), []byte(src), 0o644))
	md := filepath.Join(dir, "A.md")
	text := "`p.F` `p.F(x)` `p.T.M` `p.v` `p.Gone` `p.T.N` `redis.Client` `p/lua/x.lua`\n"
	require.NoError(t, os.WriteFile(md, []byte(text), 0o644))
	stale, err := doccheck.StaleNames(dir, md)
	require.NoError(t, err)
	require.Equal(t, []string{"p.Gone", "p.T.N"}, stale)
}

// ARCHITECTURE.md maps every library file under internal/ (testkit aside)
// by its path, so that a new file is placed on the map when it is made.
func TestArchitectureNamesEveryInternalFile(t *testing.T) {
	arch, err := os.ReadFile("../../../ARCHITECTURE.md")
	require.NoError(t, err)
	var missing []string
	err = filepath.WalkDir("../../../internal", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel := strings.TrimPrefix(filepath.ToSlash(path), "../../../")
		if d.IsDir() {
			if rel == "internal/testkit" || d.Name() == "testdata" {
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(rel, ".go") && !strings.HasSuffix(rel, "_test.go") &&
			!strings.Contains(string(arch), "`"+rel+"`") {
			missing = append(missing, rel)
		}
		return nil
	})
	require.NoError(t, err)
	if len(missing) > 0 {
		t.Errorf("ARCHITECTURE.md does not name %d files of internal/:\n%s", len(missing), strings.Join(missing, "\n"))
	}
}
