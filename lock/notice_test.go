package lock_test

import (
	"context"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// With WithForceUnlockNotice, a ForceUnlock made by another process (here
// another client, with its own hub) ends the hold at once, not at its next
// renewal 10 s later.
func TestForceUnlockNoticeFromAnotherProcess(t *testing.T) {
	each(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		mu := lock.New(env.Universal, "notice", lock.WithForceUnlockNotice())
		held, err := mu.Lock(ctx)
		require.NoError(t, err)
		inner, err := mu.Lock(held) // a re-entry shares the notice
		require.NoError(t, err)

		other := env.NewClient(t)
		ok, err := lock.New(other, "notice").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		requireForceUnlocked(t, held)
		<-inner.Done()
		require.ErrorIs(t, mu.Unlock(inner), lock.ErrLockLost)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)

		// A hold released normally hears nothing of its own unlock
		// message, and the next hold is untouched by the former's notice.
		first, err := mu.Lock(ctx)
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(first))
		next, err := lock.New(other, "notice").Lock(ctx)
		require.NoError(t, err)
		second, err := mu.Lock(ctx, lock.WithWaitTimeout(50*time.Millisecond))
		require.ErrorIs(t, err, lock.ErrNotAcquired)
		require.Nil(t, second)
		require.NoError(t, lock.New(other, "notice").Unlock(next))
	})
}

// A ForceUnlock that reaches Redis before the holder's SUBSCRIBE of the
// lock's channel (here every write of a connection dialed after the lock's
// own takes 300 ms to arrive, as on a congested path) publishes to nobody:
// the hold must still end at once, not at its next renewal 10 s later.
func TestForceUnlockNoticeBeforeItsSubscriptionArrives(t *testing.T) {
	eachSingle(t, func(t *testing.T, env *redistest.Env) {
		ctx := ctxT(t)
		var slow atomic.Bool
		c := redis.NewClient(&redis.Options{
			Addr: env.Client.Options().Addr,
			Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
				nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil || !slow.Load() {
					return nc, err
				}
				return newLateWrites(nc, 300*time.Millisecond), nil
			},
		})
		t.Cleanup(func() { _ = c.Close() })
		mu := lock.New(c, "notice:late")
		warm, err := mu.Lock(ctx) // the connections a hold uses, dialed at once
		require.NoError(t, err)
		require.NoError(t, mu.Unlock(warm))
		slow.Store(true)

		held, err := mu.Lock(ctx, lock.WithForceUnlockNotice())
		require.NoError(t, err)
		ok, err := lock.New(env.NewClient(t), "notice:late").ForceUnlock(ctx)
		require.NoError(t, err)
		require.True(t, ok)
		requireForceUnlocked(t, held)
		require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
	})
}

// requireForceUnlocked waits up to 5 s (half the default renewal period)
// for the hold held to end with ErrLockLost for a ForceUnlock.
func requireForceUnlocked(t *testing.T, held context.Context) {
	t.Helper()
	select {
	case <-held.Done():
		require.ErrorIs(t, context.Cause(held), lock.ErrLockLost)
		require.Contains(t, context.Cause(held).Error(), "force-unlocked")
	case <-time.After(5 * time.Second):
		t.Fatal("the holder did not hear of the ForceUnlock")
	}
}

// lateWrites is a connection whose writes reach the server d after they
// return, in order.
type lateWrites struct {
	net.Conn
	q    chan []byte
	done chan struct{}
	once sync.Once
}

func newLateWrites(nc net.Conn, d time.Duration) *lateWrites {
	c := &lateWrites{Conn: nc, q: make(chan []byte, 64), done: make(chan struct{})}
	go func() {
		for {
			select {
			case b := <-c.q:
				time.Sleep(d)
				if _, err := nc.Write(b); err != nil {
					return
				}
			case <-c.done:
				return
			}
		}
	}()
	return c
}

func (c *lateWrites) Write(b []byte) (int, error) {
	select {
	case c.q <- slices.Clone(b):
		return len(b), nil
	case <-c.done:
		return 0, net.ErrClosed
	}
}

func (c *lateWrites) Close() error {
	c.once.Do(func() { close(c.done) })
	return c.Conn.Close()
}
