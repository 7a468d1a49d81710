package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// TestWaiterHearsUnlockAfterABusyServerRefusedItsResubscription: a
// waiter's connections break while the server runs a long script, so the
// server refuses the resubscription of the lock's channel (BUSY). Once it
// answers again the waiter must hear the unlock, not wait out the
// holder's lease; under steady contention it would never be served.
func TestWaiterHearsUnlockAfterABusyServerRefusedItsResubscription(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv := redistest.StartServer(t, redistest.WithArgs("--busy-reply-threshold", "50"))
	const name = "busy:resub"
	holder := lock.New(srv.Client(t), name) // a 30 s watchdog lease
	held, err := holder.Lock(ctx)
	require.NoError(t, err)

	d := &redistest.Breakable{}
	waiter := lock.New(srv.Client(t, func(o *redis.Options) { o.Dialer = d.Dial }), name)
	got := make(chan time.Time, 1)
	go func() {
		h, err := waiter.Lock(ctx)
		got <- time.Now()
		if err == nil {
			_ = waiter.Unlock(h)
		}
	}()
	admin := srv.Client(t)
	redistest.RequireNumSubEventually(t, ctx, admin, 1, "redisson_lock__channel:{"+name+"}")

	wait := redistest.BusyScript(srv.Client(t, func(o *redis.Options) { o.ReadTimeout = 5 * time.Second }), time.Second)
	redistest.RequireBusy(t, ctx, admin)
	d.BreakAll()
	wait()
	redistest.RequireNumSubEventually(t, ctx, admin, 1, "redisson_lock__channel:{"+name+"}")

	released := time.Now()
	require.NoError(t, holder.Unlock(held))
	select {
	case at := <-got:
		t.Logf("the waiter took the lock %v after the unlock", at.Sub(released))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not hear the unlock within 10 s (its lease fallback is 30 s)")
	}
}
