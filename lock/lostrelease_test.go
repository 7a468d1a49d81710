package lock_test

import (
	"bytes"
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"flag"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// replyDropper is a dialer whose connections pass everything through,
// except that, once armed, the reply to the next command holding marker
// is read from Redis (the command ran) and then the connection breaks
// before the client sees it, as when a connection drops between Redis's
// run and the reply. go-redis then sends the command again on its own.
type replyDropper struct {
	marker []byte
	armed  atomic.Int32 // replies still to drop
}

func (d *replyDropper) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	nc, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	return &droppingConn{Conn: nc, d: d}, nil
}

type droppingConn struct {
	net.Conn
	d    *replyDropper
	mu   sync.Mutex
	drop bool
}

func (c *droppingConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, c.d.marker) && c.d.armed.Add(-1) >= 0 {
		c.mu.Lock()
		c.drop = true
		c.mu.Unlock()
	}
	return c.Conn.Write(b)
}

func (c *droppingConn) Read(b []byte) (int, error) {
	c.mu.Lock()
	drop := c.drop
	c.mu.Unlock()
	if !drop {
		return c.Conn.Read(b)
	}
	_, _ = c.Conn.Read(b) // Redis ran it and answered; the answer is lost
	_ = c.Conn.Close()
	return 0, io.EOF
}

func scriptSHA(src string) []byte {
	sum := sha1.Sum([]byte(src))
	return []byte(hex.EncodeToString(sum[:]))
}

// TestReleaseWhoseReplyIsLostReportsTheFirstRun: the release script ran,
// its reply was lost with its connection, and go-redis sent it again on
// its own (the default MaxRetries): the second run finds the lock gone,
// which the first run did. Unlock reports what the first run did
// (released), not ErrLockLost; plain and fair locks alike, and the lock
// is free for the next owner.
func TestReleaseWhoseReplyIsLostReportsTheFirstRun(t *testing.T) {
	for _, fair := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "fair"}[fair], func(t *testing.T) { testLostRelease(t, fair) })
	}
}

func testLostRelease(t *testing.T, fair bool) {
	{
		redistest.ForBackends(t, func(t *testing.T, env *redistest.Env) {
			ctx := ctxT(t)
			script := "unlock_last"
			d := &replyDropper{}
			rdb := redis.NewClient(&redis.Options{Addr: env.Client.Options().Addr, Dialer: d.dial})
			t.Cleanup(func() { _ = rdb.Close() })
			newLock := lock.New
			if fair {
				newLock = lock.NewFair
			}
			mu := newLock(rdb, "lost-release")
			src := lock.ScriptSources()[script]
			if fair {
				src = lock.FairScriptSources()[script]
			}
			d.marker = scriptSHA(src)
			for i := range 5 {
				held, err := mu.Lock(ctx)
				require.NoError(t, err)
				d.armed.Store(1)
				require.NoError(t, mu.Unlock(held), "round %d: the first run released it", i)
				require.Equal(t, int32(-1), d.armed.Load(), "round %d: the reply was not dropped", i)
				n, err := env.Client.Exists(ctx, "lost-release").Result()
				require.NoError(t, err)
				require.Zero(t, n, "round %d: the lock is left", i)
			}
			// A hold whose key was deleted under it is still reported lost.
			held, err := mu.Lock(ctx)
			require.NoError(t, err)
			_, err = lock.New(env.NewClient(t), "lost-release").ForceUnlock(ctx)
			require.NoError(t, err)
			require.ErrorIs(t, mu.Unlock(held), lock.ErrLockLost)
		})
	}
}

var killSections = flag.Int("kill-sections", 2000, "critical sections of TestUnlockUnderClientKill")

// TestUnlockUnderClientKill: 4 goroutines take turns on one lock while
// every normal connection is killed every 100 ms (CLIENT KILL TYPE normal),
// so that replies are lost and go-redis sends commands again on its own.
// No Unlock of a section that was never lost reports ErrLockLost, and no
// two sections overlap.
func TestUnlockUnderClientKill(t *testing.T) {
	srv := redistest.StartServer(t)
	admin := srv.Client(t)
	rdb := srv.Client(t)
	ctx := ctxT(t)
	stop := make(chan struct{})
	var killer sync.WaitGroup
	killer.Go(func() {
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				_ = admin.Do(ctx, "client", "kill", "type", "normal", "skipme", "yes").Err()
			}
		}
	})
	var inside, overlaps, falseLost, done atomic.Int64
	var workers sync.WaitGroup
	deadline := time.Now().Add(2 * time.Minute)
	for range 4 {
		workers.Go(func() {
			mu := lock.New(rdb, "killed-conns")
			for done.Add(1) <= int64(*killSections) && time.Now().Before(deadline) {
				held, err := mu.Lock(ctx)
				if err != nil {
					continue // a kill may fail a try; the next one goes on
				}
				if inside.Add(1) != 1 {
					overlaps.Add(1)
				}
				inside.Add(-1)
				if err := mu.Unlock(held); errors.Is(err, lock.ErrLockLost) && context.Cause(held) == nil {
					falseLost.Add(1)
					t.Logf("false loss: %v", err)
				}
			}
		})
	}
	workers.Wait()
	close(stop)
	killer.Wait()
	t.Logf("%d sections, %d false ErrLockLost, %d overlaps", min(done.Load(), int64(*killSections)), falseLost.Load(), overlaps.Load())
	require.Zero(t, overlaps.Load())
	require.Zero(t, falseLost.Load())
}
