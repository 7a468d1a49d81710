package conn_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/conn"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type state struct {
	client conn.Ref
	n      int
}

// One value per client while it lives; the entry goes with the client,
// and a Ref does not keep it alive.
func TestMapFollowsTheClient(t *testing.T) {
	var m conn.Map[*state]
	made := 0
	mk := func(redis.UniversalClient) func(conn.Client) *state {
		return func(c conn.Client) *state { made++; return &state{client: conn.NewRef(c), n: made} }
	}
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer a.Close()
	sa := m.Get(conn.Of(a), mk(a))
	require.Same(t, sa, m.Get(conn.Of(a), mk(a)))
	require.Equal(t, conn.Of(a), sa.client.Client())

	func() {
		b := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:1"}})
		sb := m.Get(conn.Of(b), mk(b))
		require.NotSame(t, sa, sb)
		require.Equal(t, 2, m.Len())
		require.NoError(t, b.Close())
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		return m.Len() == 1
	}, 10*time.Second, 10*time.Millisecond, "the dropped client's entry is gone")
	require.Same(t, sa, m.Get(conn.Of(a), mk(a)), "the live client's entry stays")
	require.Equal(t, 2, made)
}

// A Ref gives the zero Client once its client has been collected.
func TestRefDoesNotPin(t *testing.T) {
	var ref conn.Ref
	func() {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		ref = conn.NewRef(conn.Of(c))
		require.Equal(t, conn.Of(c), ref.Client())
		require.NoError(t, c.Close())
	}()
	require.Eventually(t, func() bool {
		runtime.GC()
		return ref.Client() == conn.Client{}
	}, 10*time.Second, 10*time.Millisecond)
}

// Several clients used in turn (a Redlock's masters) each find their own
// value, and a Client made by Of reaches its entry with no lookup.
func TestMapManyClientsInTurn(t *testing.T) {
	var m conn.Map[*state]
	var cs []*redis.Client
	for range 12 {
		c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
		defer c.Close()
		cs = append(cs, c)
	}
	made := 0
	mk := func(c conn.Client) *state { made++; return &state{client: conn.NewRef(c), n: made} }
	want := map[*redis.Client]*state{}
	for round := range 3 {
		for _, c := range cs {
			s := m.Get(conn.Of(c), mk)
			if round == 0 {
				want[c] = s
			}
			require.Same(t, want[c], s)
			require.Equal(t, conn.Of(c), s.client.Client())
		}
	}
	require.Equal(t, len(cs), made)
	var clients []conn.Client
	for _, c := range cs[:5] {
		clients = append(clients, conn.Of(c))
	}
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range clients {
			conn.PipeFor(c)
			conn.PoolFor(c)
		}
	})
	require.Zero(t, allocs, "a Client carries its entry")
}
