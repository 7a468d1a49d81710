package core

import (
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
)

// The clients are never dialled: SameLock reads their options only.
func TestSameLock(t *testing.T) {
	client := func(o *redis.Options) *redis.Client {
		c := redis.NewClient(o)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	cluster := func(addrs ...string) *redis.ClusterClient {
		c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	sentinel := func() *redis.Client {
		c := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:26379"}})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	node := func(c redis.UniversalClient, kind, name string) Member {
		return Member{Name: name, Key: NewKey(ClientOf(c), kind, name, "")}
	}
	a := client(&redis.Options{Addr: "127.0.0.1:6390"})
	a2 := client(&redis.Options{Addr: "127.0.0.1:6390"})
	aDB1 := client(&redis.Options{Addr: "127.0.0.1:6390", DB: 1})
	b := client(&redis.Options{Addr: "127.0.0.1:6391"})
	cl := cluster("127.0.0.1:7000", "127.0.0.1:7001")
	cl2 := cluster("127.0.0.1:7001", "127.0.0.1:7002")
	other := cluster("127.0.0.1:8000")
	s1, s2 := sentinel(), sentinel()

	for name, c := range map[string]struct {
		a, b Member
		same bool
	}{
		"one client":                     {node(a, "lock", "x"), node(a, "lock", "x"), true},
		"two clients, one address":       {node(a, "lock", "x"), node(a2, "lock", "x"), true},
		"a mutex and a read side":        {node(a, "lock", "x"), node(a2, "rlock", "x"), true},
		"both sides of one rwlock":       {node(a, "rlock", "x"), node(a, "wlock", "x"), true},
		"clusters sharing a seed":        {node(cl, "lock", "x"), node(cl2, "lock", "x"), true},
		"a node of the cluster":          {node(client(&redis.Options{Addr: "127.0.0.1:7000"}), "lock", "x"), node(cl, "lock", "x"), true},
		"one sentinel client":            {node(s1, "lock", "x"), node(s1, "lock", "x"), true},
		"other names":                    {node(a, "lock", "x"), node(a, "lock", "y"), false},
		"other servers":                  {node(a, "lock", "x"), node(b, "lock", "x"), false},
		"other databases":                {node(a, "lock", "x"), node(aDB1, "lock", "x"), false},
		"other clusters":                 {node(cl, "lock", "x"), node(other, "lock", "x"), false},
		"two sentinel clients (unknown)": {node(s1, "lock", "x"), node(s2, "lock", "x"), false},
		"no client (a test's member)":    {Member{Name: "x"}, Member{Name: "x"}, false},
	} {
		require.Equal(t, c.same, SameLock(c.a, c.b), name)
		require.Equal(t, c.same, SameLock(c.b, c.a), name+", reversed")
	}
}
