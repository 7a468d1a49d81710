package scripts_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
)

const owner = "0c7a4f7e-1d2b-4c3d-8e9f-0a1b2c3d4e5f:42"

func TestSchema(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{scripts.LockChannel("a"), "redisson_lock__channel:{a}"},
		{scripts.RWLockChannel("a"), "redisson_rwlock:{a}"},
		{scripts.SemaphoreChannel("a"), "redisson_sc:{a}"},
		{scripts.Token("a"), "redisson_lock_token:{a}"},
		{scripts.UnlockLatch("a"), "redisson_unlock_latch:{a}:"},
		{scripts.UnlockLatch("{t}x"), "redisson_unlock_latch:{t}x:"},
		{scripts.AcquireLatch("a"), "relock_acquire_latch:{a}:"},
		{scripts.Tag("a"), "{a}"},
		{scripts.Tag("{t}x"), "{t}x"},
		{scripts.WriteWaiters("a"), "{a}:rwlock_write_waiters"},
		{scripts.ReadTimeouts("a", owner), "{a}:" + owner + ":rwlock_timeout"},
		{scripts.ReadTimeout("a", owner, 3), "{a}:" + owner + ":rwlock_timeout:3"},
		{scripts.Permits("a"), "{a}:permits"},
		{scripts.Weights("a"), "{a}:weights"},
		{scripts.Waiters("a"), "{a}:waiters"},
		{scripts.WaiterExpiry("a"), "{a}:waiter_expiry"},
	} {
		require.Equal(t, c.want, c.got)
	}
	require.True(t, scripts.IsOwner(owner))
	for _, s := range []string{"", "x:1", owner + "x", "0c7a4f7e1d2b4c3d8e9f0a1b2c3d4e5f:1", "0c7a4f7e-1d2b-4c3d-8e9f-0a1b2c3d4e5f:"} {
		require.False(t, scripts.IsOwner(s), s)
	}
}

func TestParseReadTimeout(t *testing.T) {
	for _, name := range []string{"a", "{t}x", "a:b:c", "order:{1}"} {
		tag, o, i, ok := scripts.ParseReadTimeout(scripts.ReadTimeout(name, owner, 7))
		require.True(t, ok, name)
		require.Equal(t, scripts.Tag(name), tag, name)
		require.Equal(t, owner, o)
		require.Equal(t, int64(7), i)
	}
	for _, k := range []string{"", "{a}:rwlock_timeout:1", "{a}:" + owner + ":rwlock_timeout", "{a}:" + owner + ":rwlock_timeout:x",
		"{a}:not-an-owner:1:rwlock_timeout:1", "{a}:" + owner + ":other:1"} {
		_, _, _, ok := scripts.ParseReadTimeout(k)
		require.False(t, ok, k)
	}
}
