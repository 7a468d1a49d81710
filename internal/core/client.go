package core

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

// Client is a primitive's Redis client with the workers that bound the
// calls a caller may stop waiting for, so that no primitive handles the
// bound itself. The zero Client has neither (conn.Client.Invalid says so).
type Client struct {
	conn.Client
	workers *conn.Pool
}

// ClientOf returns rdb as a Client; its workers are shared by every
// primitive on rdb, so they are reused across values made per request.
func ClientOf(rdb redis.UniversalClient) Client { return On(conn.Of(rdb)) }

// On returns c with its workers.
func On(c conn.Client) Client {
	if c.Invalid() != "" {
		return Client{Client: c}
	}
	return Client{Client: c, workers: conn.PoolFor(c)}
}

// Go runs f on one of c's workers.
func (c Client) Go(f func()) { c.workers.Go(f) }

// Within runs call so that it returns within timeout, or ctx's deadline
// if sooner (a ctx already ended does not cut it short); an unanswered
// call returns an error Lost reports late and goes on. call must write
// only what a caller who gave up may leave: a release, a read, a force
// unlock that still tells its local holders.
func (c Client) Within(ctx context.Context, timeout time.Duration, call func(ctx context.Context) error) error {
	return conn.Within(ctx, c.workers, timeout, call)
}

// Query sends one command, args (as conn.Client.Do takes them), within
// timeout as Within does, and returns its reply; a late call's reply
// holds the error Lost reports late.
func (c Client) Query(ctx context.Context, timeout time.Duration, args ...any) conn.Reply {
	var r conn.Reply
	if err := c.Within(ctx, timeout, func(ctx context.Context) error {
		r = c.Do(ctx, args...)
		return r.Err()
	}); err != nil && conn.AfterLate(err) != nil {
		return conn.Failed(ctx, err)
	}
	return r
}

// Lost says what a failed call may have left behind: late closes when a
// call its caller stopped waiting for returns (nil if it returned), and
// uncertain is whether its script may have run (MayHaveRun).
func Lost(err error) (late <-chan struct{}, uncertain bool) {
	return conn.AfterLate(err), MayHaveRun(err)
}

// MayHaveRun reports a failed call whose script may have run (a lost reply).
func MayHaveRun(err error) bool { return err != nil && conn.MayHaveRun(err) }

// Detached returns ctx's values without its cancellation, for work nobody
// else waits for (a give-back, a Redlock member's release): a call on its
// own timeout then runs to its end.
func Detached(ctx context.Context) context.Context { return conn.Detached(ctx) }

// TimedOut reports a call ended by its deadline or a network timeout.
func TimedOut(err error) bool { return conn.Timeout(err) }

// Transient reports an error a retry may cure (GiveBack retries those).
func Transient(err error) bool { return conn.Transient(err) }

// Answered reports an error reply from Redis: its script ran no further.
func Answered(err error) bool { return conn.IsReply(err) }

// Absent reports the reply for a key or field that does not exist.
func Absent(err error) bool { return errors.Is(err, conn.Nil) }
