package rwlock_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/rwlock"
)

func Example() {
	mr, _ := miniredis.Run()
	defer mr.Close()
	rdb := redis.NewClient(&redis.Options{Addr: mr.Addr()})
	defer rdb.Close()
	ctx := context.Background()

	rw := rwlock.New(rdb, "config")
	r1, _ := rw.RLock(ctx) // two owners (two request contexts) share the read lock
	r2, err := rw.RLock(ctx)
	fmt.Println("second reader:", err)

	_, err = rw.TryLock(ctx) // a writer has to wait for them
	fmt.Println(err)
	_, err = rw.Lock(r1) // and a reader may not upgrade
	fmt.Println(errors.Is(err, rwlock.ErrUpgradeNotSupported))
	_ = rw.RUnlock(r1)
	_ = rw.RUnlock(r2)

	w, _ := rw.Lock(ctx)
	_, err = rw.TryRLock(ctx)
	fmt.Println(err)
	r, _ := rw.Downgrade(w) // write -> read, no writer in between
	r3, err := rw.TryRLock(ctx)
	fmt.Println("reader after downgrade:", err)
	_ = rw.RUnlock(r3)
	_ = rw.RUnlock(r)
	fmt.Println("hash left:", mr.Exists("config"))
	// Output:
	// second reader: <nil>
	// relock: trylock rwlock "config": not acquired
	// true
	// relock: tryrlock rwlock "config": not acquired
	// reader after downgrade: <nil>
	// hash left: false
}
