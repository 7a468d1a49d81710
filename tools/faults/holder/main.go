//go:build unix

// Command holder is the child process of relock's process-level fault tests
// (package tools/faults, build tag faults). It exists so those tests can
// SIGKILL or SIGSTOP a real lock holder, which they cannot do to a goroutine
// of their own process.
//
// It acquires one primitive on a Redis server, prints
//
//	HELD token=<fencing token>      (token=none for a semaphore, which has none)
//
// on stdout and then holds it, the shared watchdog renewing the lease, until
// it is killed. Every time it is resumed after SIGSTOP (it catches SIGCONT)
// it reports whether the context of its hold is done, waiting a short while
// for the watchdog to notice a lapse:
//
//	RESUMED done_at_resume=<bool> done=<bool> lost=<bool> waited_ms=<n> cause=<quoted>
//
// and, when -store is set, then writes to that token-checking store with its
// own fencing token whatever the answer above (a holder that checked its
// lock before it was paused writes all the same), and prints the answer:
//
//	WRITE token=<n> status=<HTTP status> body=<quoted>
//
// A hold that ends while the process runs is reported as LOST cause=<quoted>;
// a failure as ERROR <message>, with exit status 1. Usage:
//
//	holder -addr 127.0.0.1:6379 -primitive lock|rwlock-read|rwlock-write|semaphore \
//	       -name NAME -lease 1s [-size 4 -permits 3] [-store http://127.0.0.1:PORT]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

func main() {
	addr := flag.String("addr", "", "redis-server address (127.0.0.1:PORT)")
	primitive := flag.String("primitive", "lock", "lock, rwlock-read, rwlock-write or semaphore")
	name := flag.String("name", "", "name of the primitive")
	lease := flag.Duration("lease", time.Second, "watchdog timeout: the lease the watchdog keeps renewing")
	size := flag.Int64("size", 4, "semaphore size")
	permits := flag.Int64("permits", 1, "semaphore permits to acquire")
	store := flag.String("store", "", "base URL of the token-checking store written to after each resume; empty: no write")
	resumeWait := flag.Duration("resume-wait", 2*time.Second, "how long to wait, after a resume, for the hold's context to end")
	flag.Parse()
	if err := run(*addr, *primitive, *name, *lease, *size, *permits, *store, *resumeWait); err != nil {
		fmt.Printf("ERROR %v\n", err)
		os.Exit(1)
	}
}

func run(addr, primitive, name string, lease time.Duration, size, permits int64, store string, resumeWait time.Duration) error {
	if addr == "" || name == "" {
		return errors.New("-addr and -name are required")
	}
	// Subscribe before acquiring, so a SIGCONT that arrives early is not
	// lost (and does not fall to the default action, which ignores it).
	resumed := make(chan os.Signal, 8)
	signal.Notify(resumed, syscall.SIGCONT)

	// One try per operation: a retried command after a resume would only
	// blur what the test observes.
	rdb := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer rdb.Close()

	// The hold is scoped to this context: it must outlive the acquire and
	// end only when the process dies or the lease is lost.
	// (WithWaitTimeout bounds the wait alone.)
	ctx := context.Background()

	var (
		held  context.Context
		token int64
		has   bool
		err   error
	)
	switch primitive {
	case "lock":
		held, err = lock.New(rdb, name, lock.WithWatchdogTimeout(lease), lock.WithWaitTimeout(20*time.Second)).Lock(ctx)
		if err == nil {
			token, has = lock.FencingToken(held)
		}
	case "rwlock-read":
		held, err = rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease), rwlock.WithWaitTimeout(20*time.Second)).RLock(ctx)
		if err == nil {
			token, has = rwlock.FencingToken(held)
		}
	case "rwlock-write":
		held, err = rwlock.New(rdb, name, rwlock.WithWatchdogTimeout(lease), rwlock.WithWaitTimeout(20*time.Second)).Lock(ctx)
		if err == nil {
			token, has = rwlock.FencingToken(held)
		}
	case "semaphore":
		held, err = semaphore.New(rdb, name, size, semaphore.WithWatchdogTimeout(lease), semaphore.WithWaitTimeout(20*time.Second)).Acquire(ctx, permits)
	default:
		return fmt.Errorf("unknown -primitive %q", primitive)
	}
	if err != nil {
		return fmt.Errorf("acquire %s %q: %w", primitive, name, err)
	}
	if has {
		fmt.Printf("HELD token=%d\n", token)
	} else {
		fmt.Println("HELD token=none")
	}

	lost := held.Done()
	for {
		select {
		case <-resumed:
			reportResume(held, resumeWait)
			if store != "" {
				write(store, token)
			}
		case <-lost:
			fmt.Printf("LOST cause=%q\n", errString(context.Cause(held)))
			lost = nil // once; keep serving resumes
		}
	}
}

// reportResume says whether held was already done when the resume was
// noticed, and whether it is done after waiting up to wait for the
// watchdog, which runs in its own goroutine and may be scheduled after
// this one once the process continues.
func reportResume(held context.Context, wait time.Duration) {
	start := time.Now()
	atResume := held.Err() != nil
	timer := time.NewTimer(wait)
	defer timer.Stop()
	done := true
	select {
	case <-held.Done():
	case <-timer.C:
		done = false
	}
	cause := context.Cause(held)
	fmt.Printf("RESUMED done_at_resume=%t done=%t lost=%t waited_ms=%d cause=%q\n",
		atResume, done, errors.Is(cause, lock.ErrLockLost), time.Since(start).Milliseconds(), errString(cause))
}

// write sends one fenced write to the store and prints its answer.
func write(store string, token int64) {
	client := &http.Client{Timeout: 5 * time.Second}
	form := url.Values{"token": {strconv.FormatInt(token, 10)}, "writer": {"holder"}}
	resp, err := client.PostForm(strings.TrimSuffix(store, "/")+"/write", form)
	if err != nil {
		fmt.Printf("WRITE token=%d status=0 body=%q\n", token, err.Error())
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	fmt.Printf("WRITE token=%d status=%d body=%q\n", token, resp.StatusCode, strings.TrimSpace(string(body)))
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
