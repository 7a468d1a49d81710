package redistest

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestForBackends(t *testing.T) {
	var mu sync.Mutex
	var got []string
	t.Run("run", func(t *testing.T) {
		ForBackends(t, func(t *testing.T, env *Env) {
			require.NotNil(t, env.Client)
			require.NoError(t, env.Client.Ping(testContext(t)).Err())
			mu.Lock()
			got = append(got, env.Name())
			mu.Unlock()
		})
	})
	// The subtests are parallel: they have all ended once "run" has.
	assert.ElementsMatch(t, []string{"miniredis", "redis"}, got)
}

// TestPubSubHelpers follows one subscriber connection from its subscribe
// to its close with the helpers the conn and queue tests share.
func TestPubSubHelpers(t *testing.T) {
	t.Parallel()
	ctx := testContext(t)
	s := StartServer(t)
	admin := s.Client(t)
	subs := s.Client(t)

	assert.Equal(t, map[string]int64{"ch1": 0}, NumSub(t, ctx, admin, "ch1"))
	RequirePubSubConnsEventually(t, ctx, admin, 0)

	ps := subs.Subscribe(ctx, "ch1", "ch2")
	defer ps.Close()
	RequireNumSubEventually(t, ctx, admin, 1, "ch1", "ch2")
	assert.Equal(t, map[string]int64{"ch1": 1, "ch2": 1}, NumSub(t, ctx, admin, "ch1", "ch2"))
	RequirePubSubConnsEventually(t, ctx, admin, 1)
	ci := PubSubConn(t, ctx, admin)
	assert.Equal(t, 2, ci.Sub)

	require.NoError(t, ps.Close())
	RequireConnClosedEventually(t, ctx, admin, ci.ID)
	RequireNumSubEventually(t, ctx, admin, 0, "ch1", "ch2")
	RequirePubSubConnsEventually(t, ctx, admin, 0)
}
