package rwlock_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/tracing"
	"github.com/relock-go/relock/watchdog"
)

// New only describes the lock; nothing reaches Redis until the first
// call, which reports a bad argument before anything is written.
func ExampleNew() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	fmt.Println(rw.Name(), mr.Exists("catalog"))

	_, err := rwlock.New(nil, "catalog").RLock(context.Background())
	fmt.Println(errors.Is(err, rwlock.ErrInvalidArgument))
	// Output:
	// catalog false
	// true
}

// RLock is shared: two owners (two requests, each from its own context)
// read at once.
func ExampleRWMutex_RLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	alice, _ := rw.RLock(context.Background())
	bob, err := rw.RLock(context.Background())
	fmt.Println("second reader:", err)
	fmt.Println(mr.HGet("catalog", "mode"))
	_ = rw.RUnlock(bob)
	_ = rw.RUnlock(alice)
	// Output:
	// second reader: <nil>
	// read
}

// RUnlock releases one read hold; a second RUnlock of it is ErrNotHeld.
func ExampleRWMutex_RUnlock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	r, _ := rw.RLock(context.Background())
	fmt.Println(rw.RUnlock(r))
	fmt.Println(errors.Is(rw.RUnlock(r), rwlock.ErrNotHeld))
	fmt.Println("hash left:", mr.Exists("catalog"))
	// Output:
	// <nil>
	// true
	// hash left: false
}

// Lock waits until the readers are gone; while it waits, new readers are
// held back, so a stream of readers cannot starve the writer.
func ExampleRWMutex_Lock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	reader, _ := rw.RLock(context.Background())

	written := make(chan struct{})
	go func() {
		defer close(written)
		w, err := rw.Lock(context.Background()) // waits for the reader
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("writer: rebuilding catalog")
		_ = rw.Unlock(w)
	}()

	// Wait until the writer has marked itself as waiting: then a new
	// reader is turned away.
	for {
		r, err := rw.TryRLock(context.Background())
		if err != nil {
			break
		}
		_ = rw.RUnlock(r) // not yet: the writer has not arrived
		time.Sleep(time.Millisecond)
	}
	fmt.Println("new reader: held back")
	_ = rw.RUnlock(reader)
	<-written
	// Output:
	// new reader: held back
	// writer: rebuilding catalog
}

// Unlock releases the write hold; a reader asking for the write lock
// gets ErrUpgradeNotSupported instead of deadlocking on itself.
func ExampleRWMutex_Unlock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	w, _ := rw.Lock(ctx)
	fmt.Println(rw.Unlock(w))
	fmt.Println(errors.Is(rw.Unlock(w), rwlock.ErrNotHeld))

	r, _ := rw.RLock(ctx)
	_, err := rw.Lock(r)
	fmt.Println(errors.Is(err, rwlock.ErrUpgradeNotSupported))
	_ = rw.RUnlock(r)
	// Output:
	// <nil>
	// true
	// true
}

// TryLock makes one attempt at the write lock.
func ExampleRWMutex_TryLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	r, _ := rw.RLock(ctx)
	_, err := rw.TryLock(ctx)
	fmt.Println(err)
	_ = rw.RUnlock(r)

	w, err := rw.TryLock(ctx)
	fmt.Println(err)
	_ = rw.Unlock(w)
	// Output:
	// relock: trylock rwlock "catalog": not acquired
	// <nil>
}

// TryRLock makes one attempt at the read lock; the writer itself may read.
func ExampleRWMutex_TryRLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	w, _ := rw.Lock(ctx)
	_, err := rw.TryRLock(ctx) // another owner
	fmt.Println(errors.Is(err, rwlock.ErrNotAcquired))
	r, err := rw.TryRLock(w) // the writer
	fmt.Println(err)
	_ = rw.RUnlock(r)
	_ = rw.Unlock(w)
	// Output:
	// true
	// <nil>
}

// Downgrade turns a write hold into a read hold in one script: the data
// just written stays as it is (no writer gets in between), and other
// readers may join at once.
func ExampleRWMutex_Downgrade() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	w, _ := rw.Lock(ctx)
	// ... rebuild the catalog ...
	r, err := rw.Downgrade(w)
	fmt.Println("downgrade:", err)
	fmt.Println("write hold ended:", w.Err() != nil)

	other, err := rw.TryRLock(ctx)
	fmt.Println("another reader:", err)
	_, err = rw.TryLock(ctx)
	fmt.Println("another writer:", errors.Is(err, rwlock.ErrNotAcquired))
	_ = rw.RUnlock(other)
	_ = rw.RUnlock(r)
	// Output:
	// downgrade: <nil>
	// write hold ended: true
	// another reader: <nil>
	// another writer: true
}

// Name is the Redis key of the lock's hash.
func ExampleRWMutex_Name() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	r, _ := rw.RLock(context.Background())
	fmt.Println(rw.Name(), mr.Exists(rw.Name()))
	_ = rw.RUnlock(r)
	// Output: catalog true
}

// ReadLocker is the read side as a lock of its own, for code that takes
// any Lock/TryLock/Unlock value.
func ExampleRWMutex_ReadLocker() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	var read interface {
		Lock(context.Context, ...rwlock.LockOption) (context.Context, error)
		Unlock(context.Context) error
	} = rwlock.New(rdb, "catalog").ReadLocker()
	a, _ := read.Lock(ctx)
	b, err := read.Lock(ctx) // readers share
	fmt.Println(err, mr.HGet("catalog", "mode"))
	_ = read.Unlock(b)
	_ = read.Unlock(a)
	// Output: <nil> read
}

// WriteLocker is the write side as a lock of its own.
func ExampleRWMutex_WriteLocker() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	write := rwlock.New(rdb, "catalog").WriteLocker()
	w, _ := write.Lock(ctx)
	_, err := write.TryLock(ctx) // writers exclude each other
	fmt.Println(errors.Is(err, rwlock.ErrNotAcquired), mr.HGet("catalog", "mode"))
	_ = write.Unlock(w)
	// Output: true write
}

// Side.Lock takes its side: RLock for the read side, Lock for the write
// side.
func ExampleSide_Lock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	r, _ := rw.ReadLocker().Lock(ctx)
	_, err := rw.TryLock(ctx) // a writer is kept out, as by RLock
	fmt.Println(errors.Is(err, rwlock.ErrNotAcquired))
	_ = rw.ReadLocker().Unlock(r)
	// Output: true
}

// Side.TryLock tries its side once.
func ExampleSide_TryLock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	w, _ := rw.WriteLocker().TryLock(ctx)
	_, err := rw.ReadLocker().TryLock(ctx)
	fmt.Println(err)
	_ = rw.WriteLocker().Unlock(w)
	// Output: relock: tryrlock rwlock "catalog": not acquired
}

// Side.Unlock releases a hold of its side (RUnlock or Unlock).
func ExampleSide_Unlock() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	write := rwlock.New(rdb, "catalog").WriteLocker()
	w, _ := write.Lock(context.Background())
	fmt.Println(write.Unlock(w), mr.Exists("catalog"))
	// Output: <nil> false
}

// Side.Name is the lock's name, the same for both sides.
func ExampleSide_Name() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog")
	fmt.Println(rw.ReadLocker().Name(), rw.WriteLocker().Name())
	// Output: catalog catalog
}

// A side is a redlock.Member: here a multi-lock reads the catalog and
// writes an order, all or nothing.
func Example_redlockMember() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	catalog := rwlock.New(rdb, "catalog").ReadLocker()
	order := rwlock.New(rdb, "order:1").WriteLocker()
	var _ redlock.Member = catalog
	both := redlock.NewMulti([]redlock.Member{catalog, order})
	held, err := both.Lock(ctx)
	fmt.Println(err, mr.HGet("catalog", "mode"), mr.HGet("order:1", "mode"))
	_ = both.Unlock(held)
	// Output: <nil> read write
}

// FencingToken returns the token of a read or write hold; every
// acquisition, of either side, draws a larger one.
func ExampleFencingToken() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "catalog")
	r, _ := rw.RLock(ctx)
	t1, _ := rwlock.FencingToken(r)
	_ = rw.RUnlock(r)
	w, _ := rw.Lock(ctx)
	t2, _ := rwlock.FencingToken(w)
	_ = rw.Unlock(w)
	fmt.Println(t2 > t1)
	// Output: true
}

// WithLeaseTime gives read and write holds a fixed lease, no renewal.
func ExampleWithLeaseTime() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithLeaseTime(5*time.Second))
	w, _ := rw.Lock(context.Background())
	fmt.Println(mr.TTL("catalog"))
	_ = rw.Unlock(w)
	// Output: 5s
}

// WithWatchdogTimeout sets the lease the watchdog keeps renewing.
func ExampleWithWatchdogTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithWatchdogTimeout(12*time.Second))
	w, _ := rw.Lock(context.Background())
	fmt.Println(mr.TTL("catalog"))
	_ = rw.Unlock(w)
	// Output: 12s
}

// WithWaitTimeout bounds how long RLock and Lock wait.
func ExampleWithWaitTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithWaitTimeout(50*time.Millisecond))
	w, _ := rw.Lock(context.Background())
	_, err := rw.RLock(context.Background()) // another owner gives up after 50 ms
	fmt.Println(errors.Is(err, rwlock.ErrNotAcquired))
	_ = rw.Unlock(w)
	// Output: true
}

// WithUnlockTimeout bounds RUnlock and Unlock, which complete even when
// their context is done.
func ExampleWithUnlockTimeout() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	rw := rwlock.New(rdb, "catalog", rwlock.WithUnlockTimeout(time.Second))
	r, _ := rw.RLock(context.Background())
	request, cancel := context.WithCancel(r)
	cancel()
	fmt.Println(rw.RUnlock(request), mr.Exists("catalog"))
	// Output: <nil> false
}

// WithTracerProvider sends the acquire spans to tp; each side has its own
// span name.
func ExampleWithTracerProvider() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(ctx) }()

	rw := rwlock.New(rdb, "catalog", rwlock.WithTracerProvider(tp))
	r, _ := rw.RLock(ctx)
	_ = rw.RUnlock(r)
	w, _ := rw.Lock(ctx)
	_ = rw.Unlock(w)
	for _, s := range rec.Ended() {
		if s.Name() == tracing.SpanAcquireReadLock || s.Name() == tracing.SpanAcquireWriteLock {
			fmt.Println(s.Name())
		}
	}
	// Output:
	// acquire read lock
	// acquire write lock
}

// WithWatchdog sets the watchdog that renews the holds.
func ExampleWithWatchdog() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()

	wd := watchdog.New()
	rw := rwlock.New(rdb, "catalog", rwlock.WithWatchdog(wd))
	r, _ := rw.RLock(context.Background())
	fmt.Println("leases kept:", wd.Stats().Held)
	_ = rw.RUnlock(r)
	fmt.Println("leases kept:", wd.Stats().Held)
	// Output:
	// leases kept: 1
	// leases kept: 0
}

// WithLogger sends the warnings about a server that undermines a
// guarantee (an eviction policy that may evict lock keys) to a logger of
// the service's own; a nil logger is refused.
func ExampleWithLogger() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	logger := slog.New(slog.NewTextHandler(os.Stderr, nil)).With("component", "locks")
	held, err := rwlock.New(rdb, "jobs", rwlock.WithLogger(logger)).TryLock(ctx)
	fmt.Println(err)
	_ = rwlock.New(rdb, "jobs").Unlock(held)
	_, err = rwlock.New(rdb, "jobs", rwlock.WithLogger(nil)).TryLock(ctx)
	fmt.Println(errors.Is(err, rwlock.ErrInvalidArgument))
	// Output:
	// <nil>
	// true
}
