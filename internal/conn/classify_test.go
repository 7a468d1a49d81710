package conn_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTransient(t *testing.T) {
	t.Parallel()
	var _ redis.Error = redisError("")
	for _, c := range []struct {
		err  error
		want bool
	}{
		{refused(), true},
		{fmt.Errorf("wrapped: %w", refused()), true},
		{&net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, true},
		{syscall.ECONNREFUSED, true},
		{syscall.EPIPE, true},
		{io.EOF, true},
		{io.ErrUnexpectedEOF, true},
		{redis.ErrPoolTimeout, true},
		{context.DeadlineExceeded, true}, // a per-call timeout: the caller's own end is checked first
		{redisError("LOADING Redis is loading the dataset in memory"), true},
		{redisError("READONLY You can't write against a read only replica."), true},
		{redisError("MASTERDOWN Link with MASTER is down"), true},
		{redisError("CLUSTERDOWN The cluster is down"), true},
		{redisError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{redisError("BUSY Redis is busy running a script."), true},
		{redisError("ERR max number of clients reached"), true},

		{nil, false},
		{errors.New("boom"), false},
		{redisError("ERR user_script:1: Script attempted to access nonexistent global variable"), false},
		{redisError("NOSCRIPT No matching script. Please use EVAL."), false},
		{redisError("NOPERM this user has no permissions to access the channel"), false},
		{redisError("BUSYGROUP Consumer Group name already exists"), false},
		{errs.Invalid("lock", "lock", "x", "bad"), false},
		{redis.ErrClosed, false},
		{context.Canceled, false},
		{errs.ErrNotAcquired, false},
		{redis.Nil, false},
	} {
		assert.Equal(t, c.want, conn.Transient(c.err), "%v", c.err)
	}
}

// redisError is an error reply as go-redis returns it.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func TestMayHaveRunResendTimeout(t *testing.T) {
	for _, c := range []struct {
		err                          error
		mayHaveRun, resend, timedOut bool
	}{
		{redisError("ERR boom"), false, false, false},
		{redisError("BUSY Redis is busy running a script."), false, true, false},
		{redisError("LOADING Redis is loading the dataset in memory"), false, true, false},
		{redisError("NOPERM this user has no permissions to run the 'publish' command"), false, false, false},
		{redis.ErrClosed, false, false, false}, // nothing outlives a closed client
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false, true, false},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true, true, false},
		{context.DeadlineExceeded, true, false, true},
		{context.Canceled, true, false, false},
		{io.EOF, true, true, false},
	} {
		assert.Equal(t, c.mayHaveRun, conn.MayHaveRun(c.err), "MayHaveRun(%v)", c.err)
		assert.Equal(t, c.resend, conn.Resend(c.err), "Resend(%v)", c.err)
		assert.Equal(t, c.timedOut, conn.Timeout(c.err), "Timeout(%v)", c.err)
	}
	// Read from a script's reply, not from a send: the script answered.
	assert.False(t, conn.MayHaveRun(errs.WrongKind(errs.KindSemaphore)))

	// A late call goes on, whatever cause ended its caller's wait.
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errs.WrongKind(errs.KindLock))
	release := make(chan struct{})
	defer close(release)
	late := conn.NewPool(0).Bound(ctx, 0, func() { <-release })
	require.NotNil(t, conn.AfterLate(late))
	assert.True(t, conn.MayHaveRun(late))
}

func refused() error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: &net.AddrError{Err: "connect: connection refused"}}
}

func TestRedirect(t *testing.T) {
	for _, c := range []struct {
		err  error
		slot int
		ok   bool
	}{
		{redisError("MOVED 3999 127.0.0.1:6381"), 3999, true},
		{redisError("ASK 12 127.0.0.1:6381"), 12, true},
		{redisError("ERR unknown"), 0, false},
		{redisError("MOVED x"), 0, false},
		{io.EOF, 0, false},
		{nil, 0, false},
	} {
		slot, ok := conn.Redirect(c.err)
		if slot != c.slot || ok != c.ok {
			t.Errorf("Redirect(%v) = %d, %v; want %d, %v", c.err, slot, ok, c.slot, c.ok)
		}
	}
}

func TestTryAgain(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{redisError("BUSY Redis is busy running a script."), true},
		{redisError("LOADING Redis is loading the dataset in memory"), true},
		{redisError("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{redisError("MASTERDOWN Link with MASTER is down"), true},
		{redisError("CLUSTERDOWN The cluster is down"), true},
		{redisError("READONLY You can't write against a read only replica."), true},
		{redisError("BUSYGROUP Consumer Group name already exists"), false},
		{redisError("MOVED 3999 127.0.0.1:6381"), false},
		{redisError("NOPERM this user has no permissions"), false},
		{io.EOF, false},
		{nil, false},
	} {
		assert.Equal(t, c.want, conn.TryAgain(c.err), "TryAgain(%v)", c.err)
	}
}
