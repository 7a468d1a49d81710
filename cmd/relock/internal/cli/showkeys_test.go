package cli_test

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/cli"
	"github.com/relock-go/relock/election"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// showKeys runs show --json NAME and returns the keys it lists.
func showKeys(t *testing.T, args []string, name string) map[string]bool {
	t.Helper()
	var out bytes.Buffer
	app := &cli.App{Stdout: &out, Stderr: &out}
	if code := app.Run(testCtx(t), append([]string{"show", "--json", name}, args...)); code != 0 {
		t.Fatalf("show %q: exit %d: %s", name, code, out.String())
	}
	var d struct{ Keys []struct{ Key string } }
	if err := json.Unmarshal(out.Bytes(), &d); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, k := range d.Keys {
		keys[k.Key] = true
	}
	return keys
}

// requireKey fails unless keys holds one key with prefix, and checks that
// the key exists.
func requireKey(t *testing.T, c redis.UniversalClient, keys map[string]bool, name, prefix string) {
	t.Helper()
	for k := range keys {
		if strings.HasPrefix(k, prefix) {
			if c.Exists(testCtx(t), k).Val() != 1 {
				t.Errorf("show %q lists %q, which does not exist", name, k)
			}
			return
		}
	}
	t.Errorf("show %q lacks a key %q...: %v", name, prefix, keys)
}

// show lists every key of a name: the holder labels, the unlock and
// acquire latches and an election's record besides the lock's own keys.
func TestShowListsLabelsLatchesAndElectionRecord(t *testing.T) {
	for _, b := range redistest.AllBackends() {
		t.Run(b.Name, func(t *testing.T) {
			env := b.New(t)
			if env == nil {
				return
			}
			c := env.U()
			var args []string
			if env.Cluster != nil {
				args = []string{"--cluster", "--addr", env.Cluster[0].Addr}
			} else {
				args = []string{"--addr", env.Client.Options().Addr}
			}
			// a name with glob characters, which SCAN's pattern must not
			// take as such, and a neighbour whose keys must not be listed
			for _, name := range []string{"job:7", "job*[7]?\\"} {
				m := lock.New(c, name, lock.WithLeaseTime(lease), lock.WithHolderLabel("pod-1"))
				held, err := m.Lock(core.WithOwner(context.Background(), ownerA))
				if err != nil {
					t.Fatal(err)
				}
				again, err := m.Lock(held) // re-entry, released at once: an unlock latch
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Unlock(again); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = m.Unlock(held) })
			}
			// an acquire latch as a re-entry leaves one when a retry needs it
			if err := c.Set(testCtx(t), scripts.AcquireLatch("job:7")+"r1", 1, lease).Err(); err != nil {
				t.Fatal(err)
			}
			n := lock.New(c, "job:77", lock.WithLeaseTime(lease), lock.WithHolderLabel("pod-2"))
			other, err := n.Lock(core.WithOwner(context.Background(), ownerB))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = n.Unlock(other) })

			for _, name := range []string{"job:7", "job*[7]?\\"} {
				keys := showKeys(t, args, name)
				requireKey(t, c, keys, name, scripts.HolderLabel(name, ownerA))
				requireKey(t, c, keys, name, scripts.UnlockLatch(name))
				for k := range keys {
					if strings.Contains(k, "job:77") {
						t.Errorf("show %q lists %q, a key of job:77", name, k)
					}
				}
			}
			requireKey(t, c, showKeys(t, args, "job:7"), "job:7", scripts.AcquireLatch("job:7"))

			e := election.New(c, "leader:1", election.WithLeaseTime(lease))
			leading, err := e.Campaign(core.WithOwner(context.Background(), ownerC), "me")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = e.Resign(leading) })
			requireKey(t, c, showKeys(t, args, "leader:1"), "leader:1", scripts.ElectionRecord("leader:1"))
		})
	}
}
