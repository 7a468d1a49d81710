package redistest

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
)

// ACLEnv is a server (or the shared cluster) with a user made by rules,
// and an admin client that sees every key.
type ACLEnv struct {
	Admin   redis.UniversalClient
	User    redis.UniversalClient
	Cluster bool
}

// NewACLEnv makes user on every node of env with rules (after "reset on
// >pw") and deletes it at the test's end, the shared cluster surviving it.
func NewACLEnv(t *testing.T, ctx context.Context, env *Env, user string, rules ...string) *ACLEnv {
	t.Helper()
	args := []any{"acl", "setuser", user, "reset", "on", ">pw"}
	for _, r := range rules {
		args = append(args, r)
	}
	e := &ACLEnv{Admin: env.Universal}
	if env.Cluster != nil {
		e.Cluster = true
		for _, s := range env.Cluster {
			a := s.Client(t)
			noError(t, a.Do(ctx, args...).Err())
			t.Cleanup(func() { a.Do(context.Background(), "acl", "deluser", user) })
		}
		cc := NewClusterClient(env.Cluster)
		opts := cc.Options()
		_ = cc.Close()
		opts.Username, opts.Password = user, "pw"
		e.User = redis.NewClusterClient(opts)
	} else {
		noError(t, env.Client.Do(ctx, args...).Err())
		e.User = redis.NewClient(&redis.Options{Addr: env.Client.Options().Addr, Username: user, Password: "pw"})
	}
	t.Cleanup(func() { _ = e.User.Close() })
	return e
}

// Keyspace is every key of c and its DUMP (value and type), for a
// before/after comparison.
func Keyspace(t *testing.T, ctx context.Context, c redis.UniversalClient) map[string]string {
	t.Helper()
	out := map[string]string{}
	scan := func(ctx context.Context, n *redis.Client) error {
		iter := n.Scan(ctx, 0, "*", 0).Iterator()
		for iter.Next(ctx) {
			out[iter.Val()] = n.Dump(ctx, iter.Val()).Val()
		}
		return iter.Err()
	}
	switch cl := c.(type) {
	case *redis.ClusterClient:
		var mu = make(chan struct{}, 1)
		noError(t, cl.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu <- struct{}{}
			defer func() { <-mu }()
			return scan(ctx, n)
		}))
	case *redis.Client:
		noError(t, scan(ctx, cl))
	}
	return out
}

// noError ends the test at err, as testify's require.NoError would.
func noError(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
