package fencecheck

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// examples/fencing runs on PostgreSQL when DATABASE_URL is set: run it
// so on the tests' own server (its embedded SQLite run is its own test).
func TestExampleFencingOnPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs an example")
	}
	_, dsn := newPostgres(t)
	cmd := exec.Command("go", "-C", "../../examples/fencing", "run", ".")
	cmd.Env = append(os.Environ(), "DATABASE_URL="+dsn, "REDIS_ADDR=")
	out, err := cmd.CombinedOutput()
	t.Logf("\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Using PostgreSQL", "database: REJECTED \"A's second entry\"", "ledger holds \"B's entry\""} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output lacks %q", want)
		}
	}
}
