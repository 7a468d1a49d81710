// Command fencing shows why a lock is not enough when a holder can stall,
// and how a fencing token makes the resource itself refuse a stale holder.
//
// Holder A takes the lock and writes. Then, having just checked that it
// still holds the lock, it stalls before its next write: a GC pause, a
// stalled VM, a slow disk. Its lease runs out meanwhile, B takes the lock
// and writes. When A resumes, it sends its write anyway: it cannot know
// that time passed. The store rejects it, because every write carries the
// writer's fencing token and the store has already seen a larger one.
//
// A real stall stops the holder's watchdog too, so its lease is not renewed;
// here A is given a fixed 500 ms lease (WithLeaseTime) instead, and its stall
// lasts until B has written. The embedded miniredis's clock follows the wall
// clock, so the lease ends on time as it would on a real server.
//
//	go run ./examples/fencing                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/fencing # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"sync"
	"time"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/lock"
)

const name = "examples:fencing:ledger"

func main() {
	if err := run(context.Background(), os.Stdout); err != nil {
		log.Fatal(err)
	}
}

func run(ctx context.Context, out io.Writer) error {
	rdb, closeAll, err := exredis.Connect(out)
	if err != nil {
		return err
	}
	defer closeAll()
	st := &store{out: out}

	muA := lock.New(rdb, name, lock.WithLeaseTime(500*time.Millisecond))
	heldA, err := muA.Lock(ctx)
	if err != nil {
		return err
	}
	tokA, _ := lock.FencingToken(heldA)
	fmt.Fprintf(out, "A: locked with fencing token %d (lease 500ms)\n", tokA)
	if err := st.Write(tokA, "A's first entry"); err != nil {
		return err
	}
	fmt.Fprintf(out, "A: checked its lock (held: %v), then stalls before its next write\n", heldA.Err() == nil)

	bWrote := make(chan error, 1)
	go func() { // B: another process, in effect: its own Mutex and owner
		muB := lock.New(rdb, name)
		heldB, err := muB.Lock(ctx) // waits until A's lease ends
		if err != nil {
			bWrote <- err
			return
		}
		tokB, _ := lock.FencingToken(heldB)
		fmt.Fprintf(out, "B: locked once A's lease ended, fencing token %d\n", tokB)
		err = st.Write(tokB, "B's entry")
		bWrote <- errors.Join(err, muB.Unlock(heldB))
	}()

	select { // A's stall: it lasts until B has written
	case err := <-bWrote:
		if err != nil {
			return err
		}
	case <-time.After(5 * time.Second):
		return errors.New("holder B did not get the lock")
	}
	fmt.Fprintln(out, "A: resumes and writes, as it was about to")
	if err := st.Write(tokA, "A's second entry"); err == nil {
		return errors.New("the store accepted a stale write")
	}
	// A could have learnt of the loss, but only by looking after the stall:
	// its context ended when the lease did.
	fmt.Fprintf(out, "A: its lock context says lost: %v; Unlock says lost: %v\n",
		errors.Is(context.Cause(heldA), lock.ErrLockLost), errors.Is(muA.Unlock(heldA), lock.ErrLockLost))
	fmt.Fprintf(out, "store holds %q\n", st.value)
	return nil
}

// store is a resource that checks fencing tokens: it refuses a write whose
// token is older than one it has already accepted. In production this is a
// conditional update in the database (WHERE token <= ?), an object store's
// precondition, and the like.
type store struct {
	out   io.Writer
	mu    sync.Mutex
	token int64
	value string
}

func (s *store) Write(token int64, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.token {
		fmt.Fprintf(s.out, "store: REJECTED %q: token %d is older than %d\n", value, token, s.token)
		return fmt.Errorf("stale fencing token %d (latest %d)", token, s.token)
	}
	s.token, s.value = token, value
	fmt.Fprintf(s.out, "store: accepted %q with token %d\n", value, token)
	return nil
}
