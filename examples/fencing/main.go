// Command fencing shows why a lock is not enough when a holder can stall,
// and how a fencing token makes the database itself refuse a stale holder.
//
// Holder A takes the lock and writes. Then, having just checked that it
// still holds the lock, it stalls before its next write: a GC pause, a
// stalled VM, a slow disk. Its lease runs out meanwhile, B takes the lock
// and writes. When A resumes, it sends its write anyway: it cannot know
// that time passed. The database rejects it: every write's transaction
// begins with fence.SQL's Check of the writer's fencing token, and the
// ledger has already seen a larger one.
//
// A real stall stops the holder's watchdog too, so its lease is not renewed;
// here A is given a fixed 500 ms lease (WithLeaseTime) instead, and its stall
// lasts until B has written.
//
// The example is a module of its own, so that its database drivers never
// enter relock's go.mod:
//
//	go -C examples/fencing run .                                    # embedded miniredis and SQLite
//	REDIS_ADDR=127.0.0.1:6379 go -C examples/fencing run .          # a real Redis
//	DATABASE_URL=postgres://user@host/db go -C examples/fencing run . # PostgreSQL
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
	_ "modernc.org/sqlite"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/fence"
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
	st, err := openLedger(ctx, out)
	if err != nil {
		return err
	}
	defer st.Close()

	muA := lock.New(rdb, name, lock.WithLeaseTime(500*time.Millisecond))
	heldA, err := muA.Lock(ctx)
	if err != nil {
		return err
	}
	tokA, _ := lock.FencingToken(heldA)
	fmt.Fprintf(out, "A: locked with fencing token %d (lease 500ms)\n", tokA)
	if err := st.Write(ctx, tokA, "A's first entry"); err != nil {
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
		err = st.Write(ctx, tokB, "B's entry")
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
	if err := st.Write(ctx, tokA, "A's second entry"); !errors.Is(err, fence.ErrStale) {
		return fmt.Errorf("the database did not refuse the stale write: %v", err)
	}
	// A could have learnt of the loss, but only by looking after the stall:
	// its context ended when the lease did.
	fmt.Fprintf(out, "A: its lock context says lost: %v; Unlock says lost: %v\n",
		errors.Is(context.Cause(heldA), lock.ErrLockLost), errors.Is(muA.Unlock(heldA), lock.ErrLockLost))
	v, err := st.Value(ctx)
	fmt.Fprintf(out, "ledger holds %q\n", v)
	return err
}
