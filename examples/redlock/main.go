// Command redlock shows one lock held across 5 independent Redis masters
// (the Redlock algorithm): it is held while a quorum of 3 of them hold it.
//
// The lock is taken on all 5; then one master is killed. The hold survives,
// because the watchdog renews it on the 4 masters left, and another owner
// still cannot get it. After Unlock, a new owner acquires it with 4 masters
// up. When two more masters die, the quorum is gone: the holder's context
// ends with ErrLockLost within a lease, the members that survived are given
// back at once, and Unlock reports the loss.
//
//	go run ./examples/redlock                  # 5 embedded miniredis masters
//	REDIS_ADDRS=h1:6379,h2:6379,h3:6379,h4:6379,h5:6379 go run ./examples/redlock
//
// With real masters, a "killed" master is simulated by closing this
// program's client of it; the servers themselves are left alone.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
)

const name = "examples:redlock:invoice"

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	servers, err := exredis.StartN(out, 5)
	if err != nil {
		return err
	}
	// go-redis logs each failed dial to a dead master; keep the output readable.
	redis.SetLogger(quiet{})
	clients := make([]*redis.Client, len(servers))
	members := make([]redlock.Member, len(servers))
	for i, s := range servers {
		// Give up on a dead master fast: deadlines bound the I/O (so a
		// renewal stuck on it cannot outlive the lease), one dial attempt.
		clients[i] = redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true, DialerRetries: 1})
		members[i] = lock.New(clients[i], name) // the same name on every master
		defer s.Close()
		defer clients[i].Close() // runs before s.Close
	}
	kill := func(i int) {
		if servers[i].Embedded() {
			servers[i].Close()
		} else {
			clients[i].Close() // the master is unreachable from here on
		}
		fmt.Fprintf(out, "-- master %d killed\n", i+1)
	}
	// A 1.5 s lease, renewed every 500 ms by the watchdog on every master
	// won. Unlock returns once a quorum released; a dead member is retried
	// in the background up to the unlock timeout (5 s by default): bound
	// that too.
	rl := redlock.New(members, redlock.WithWatchdogTimeout(1500*time.Millisecond),
		redlock.WithUnlockTimeout(300*time.Millisecond))
	other := func(when string) { // another owner, on its own context
		_, err := rl.TryLock(context.Background())
		fmt.Fprintf(out, "%s, another owner's TryLock: not acquired = %v\n", when, errors.Is(err, redlock.ErrNotAcquired))
	}

	held, err := rl.Lock(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "acquired (quorum %d of %d); masters: %s\n", rl.Quorum(), len(members), state(ctx, clients))
	kill(2)
	time.Sleep(2 * time.Second) // longer than the lease: only renewal keeps it
	fmt.Fprintf(out, "2 s later: hold alive = %v; masters: %s\n", held.Err() == nil, state(ctx, clients))
	other("while it is held")
	fmt.Fprintf(out, "Unlock: %v (a quorum released)\n\n", rl.Unlock(held))
	// The members past the quorum are released in the background; a new
	// Lock right away could find one still held and settle for a quorum
	// without it. Drain waits for them.
	if err := rl.Drain(ctx); err != nil {
		return err
	}

	held, err = rl.Lock(ctx)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "a new owner acquired it with 4 masters up; masters: %s\n", state(ctx, clients))
	kill(3)
	kill(4)
	select {
	case <-held.Done():
		fmt.Fprintf(out, "the hold ended: ErrLockLost = %v\n", errors.Is(context.Cause(held), redlock.ErrLockLost))
	case <-time.After(5 * time.Second):
		return errors.New("the hold outlived its quorum")
	}
	fmt.Fprintf(out, "Unlock reports the loss: %v\n", errors.Is(rl.Unlock(held), redlock.ErrLockLost))
	// The members that survived the loss were given back at once, in the
	// background; Drain waits for that.
	if err := rl.Drain(ctx); err != nil {
		return err
	}
	fmt.Fprintf(out, "survivors given back; masters: %s\n", state(ctx, clients))
	other("with 2 masters up")
	// That failed round gives back, in the background, what it may hold
	// on the masters that are down: a program waits for it before exiting.
	return rl.Drain(ctx)
}

// state says what each master holds: the lock, nothing, or it is down.
func state(ctx context.Context, clients []*redis.Client) string {
	s := make([]string, len(clients))
	for i, c := range clients {
		n, err := c.Exists(ctx, name).Result()
		switch {
		case err != nil:
			s[i] = "down"
		case n == 1:
			s[i] = "held"
		default:
			s[i] = "free"
		}
	}
	return strings.Join(s, " ")
}

type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}
