package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/relock-go/relock/cmd/relock/internal/cli"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// Names the library accepts that must not reach the operator's terminal
// as they are: an escape sequence (colours, cursor moves), a newline that
// would split a row, a tab that would shift its columns.
var hostileNames = []string{"evil\x1b[31mred", "two\nlines", "tab\tname"}

// controls returns the control characters of s other than the newlines
// that end its lines.
func controls(s string) []string {
	var out []string
	for _, r := range s {
		if r != '\n' && (r < 0x20 || r == 0x7f) {
			out = append(out, strconv.QuoteRune(r))
		}
	}
	return out
}

func TestNamesWithControlCharactersAreEscaped(t *testing.T) {
	for _, b := range redistest.Backends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			ctx := testCtx(t)
			for _, name := range hostileNames {
				m := lock.New(env.Client, name, lock.WithLeaseTime(lease))
				held, err := m.Lock(core.WithOwner(context.Background(), ownerA))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = m.Unlock(held) })
			}
			// a leak of such a name: a lock hash without TTL
			leaked := "leak\x1b[2J"
			if err := env.Client.HSet(ctx, leaked, ownerB, 1).Err(); err != nil {
				t.Fatal(err)
			}
			r := newRunner(t)
			addr := env.Client.Options().Addr

			ls := r.run("", "ls", "--addr", addr)
			requireEscaped(t, "ls", ls)
			if n := strings.Count(ls.stdout, "\n"); n != 1+len(hostileNames)+1 {
				t.Errorf("ls: %d lines, want a header and one row per lock:\n%s", n, ls.stdout)
			}
			for _, name := range append(hostileNames, leaked) {
				if !strings.Contains(ls.stdout, strconv.Quote(name)) {
					t.Errorf("ls does not show %s quoted:\n%s", strconv.Quote(name), ls.stdout)
				}
				show := r.run("", "show", "--addr", addr, name)
				requireEscaped(t, "show "+strconv.Quote(name), show)
				if !strings.Contains(show.stdout, "name:           "+strconv.Quote(name)+"\n") {
					t.Errorf("show %s: name not quoted:\n%s", strconv.Quote(name), show.stdout)
				}
			}
			requireEscaped(t, "leaks", r.run("", "leaks", "--addr", addr))

			// JSON keeps the names exact
			var es []struct{ Name string }
			var out bytes.Buffer
			app := &cli.App{Stdout: &out, Stderr: &out}
			if code := app.Run(ctx, []string{"ls", "--json", "--addr", addr}); code != 0 {
				t.Fatalf("ls --json: exit %d: %s", code, out.String())
			}
			if err := json.Unmarshal(out.Bytes(), &es); err != nil {
				t.Fatal(err)
			}
			got := map[string]bool{}
			for _, e := range es {
				got[e.Name] = true
			}
			for _, name := range append(hostileNames, leaked) {
				if !got[name] {
					t.Errorf("ls --json lacks the exact name %s: %v", strconv.Quote(name), got)
				}
			}
		})
	}
}

func requireEscaped(t *testing.T, what string, res result) {
	t.Helper()
	if cs := controls(res.stdout + res.stderr); len(cs) > 0 {
		t.Errorf("%s prints control characters %v:\n%s%s", what, cs, res.stdout, res.stderr)
	}
}
