package fence_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/fence"
)

// The statements run against real databases in tools/fencecheck; here,
// only what needs no driver.
func TestNewSQL(t *testing.T) {
	g, err := fence.NewSQL(fence.PostgreSQL, "")
	if err != nil {
		t.Fatal(err)
	}
	if m := g.Migration(); !strings.Contains(m, "CREATE TABLE IF NOT EXISTS relock_fence") || !strings.Contains(m, "BIGINT") {
		t.Errorf("migration %q", m)
	}
	s, err := fence.NewSQL(fence.SQLite, "fences")
	if err != nil || !strings.Contains(s.Migration(), "fences") {
		t.Fatalf("NewSQL(SQLite, fences) = %v", err)
	}
	for _, c := range []struct {
		d     fence.Dialect
		table string
	}{{fence.PostgreSQL, "a;drop"}, {fence.SQLite, "public.t"}, {0, "t"}} {
		if _, err := fence.NewSQL(c.d, c.table); !errors.Is(err, relock.ErrInvalidArgument) {
			t.Errorf("NewSQL(%d, %q) = %v, want ErrInvalidArgument", c.d, c.table, err)
		}
	}
}
