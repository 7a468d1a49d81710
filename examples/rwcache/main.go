// Command rwcache shows readers and a writer around a cache refresh, with
// a write-to-read downgrade.
//
// A cache entry in Redis (a version and the data of that version) is read by
// three readers under the read lock while a refresher replaces it:
//
//  1. fetch: the refresher fetches the new version from upstream holding no
//     lock, so readers keep being served the current entry all along;
//
//  2. write: it takes the write lock and rewrites the entry in two steps;
//     readers wait, so none is served a half-written entry;
//
//  3. downgrade: it turns the write lock into a read lock in one step and
//     builds what depends on the new entry. Readers are back at once, while
//     no writer (a rival refresher here) can slip in between its write and
//     its read and leave it working from an entry it did not write, as an
//     Unlock followed by RLock would allow.
//
//     go run ./examples/rwcache                           # embedded miniredis
//     REDIS_ADDR=127.0.0.1:6379 go run ./examples/rwcache # a real Redis
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/rwlock"
)

const key = "examples:rwcache:prices"

var phases = []string{"fetch", "write", "downgrade", "done"}

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
	rw := rwlock.New(rdb, key+":lock")
	if err := rdb.HSet(ctx, key, "version", 1, "data", "prices v1").Err(); err != nil {
		return err
	}

	var phase atomic.Int32                       // index into phases; read by readers under the read lock
	served := [4]map[string]bool{{}, {}, {}, {}} // entries served, by phase
	var mu sync.Mutex                            // guards served and readErr
	var readErr error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				p, entry, err := read(ctx, rw, rdb, &phase)
				mu.Lock()
				if err == nil {
					served[p][entry] = true
				} else if readErr == nil {
					readErr = err
				}
				mu.Unlock()
			}
		})
	}

	err = refresh(ctx, out, rw, rdb, &phase)
	time.Sleep(100 * time.Millisecond) // let readers see the final state
	close(stop)
	wg.Wait()
	if err == nil {
		err = readErr
	}
	for i, p := range phases {
		fmt.Fprintf(out, "readers served during %-10s %q\n", p+":", slices.Sorted(maps.Keys(served[i])))
	}
	return err
}

// read serves one reader: the whole entry under the read lock.
func read(ctx context.Context, rw *rwlock.RWMutex, rdb *redis.Client, phase *atomic.Int32) (int32, string, error) {
	held, err := rw.RLock(ctx)
	if err != nil {
		return 0, "", err
	}
	defer rw.RUnlock(held)
	e, err := rdb.HGetAll(held, key).Result()
	if err != nil {
		return 0, "", err
	}
	entry := "v" + e["version"]
	if e["data"] != "prices "+entry {
		entry = "TORN:" + entry + "/" + e["data"] // what a reader without the lock could see
	}
	return phase.Load(), entry, nil
}

func refresh(ctx context.Context, out io.Writer, rw *rwlock.RWMutex, rdb *redis.Client, phase *atomic.Int32) error {
	fmt.Fprintln(out, "refresher: fetching v2 from upstream, holding no lock")
	time.Sleep(300 * time.Millisecond)

	held, err := rw.Lock(ctx) // waits for the readers inside to leave
	if err != nil {
		return err
	}
	phase.Store(1) // no reader holds the lock now, so none can observe the switch
	fmt.Fprintln(out, "refresher: write lock taken; rewriting the entry in two steps")
	if err := rdb.HSet(held, key, "version", 2).Err(); err != nil {
		return errors.Join(err, rw.Unlock(held))
	}
	time.Sleep(100 * time.Millisecond) // a big entry takes a while
	if err := rdb.HSet(held, key, "data", "prices v2").Err(); err != nil {
		return errors.Join(err, rw.Unlock(held))
	}

	phase.Store(2) // still write-locked: readers come back only after Downgrade
	rheld, err := rw.Downgrade(held)
	if err != nil {
		return errors.Join(err, rw.Unlock(held))
	}
	_, err = rwlock.New(rdb, key+":lock").TryLock(ctx) // a rival refresher, another owner
	fmt.Fprintf(out, "refresher: downgraded to a read lock; a rival writer's TryLock: not acquired = %v\n",
		errors.Is(err, rwlock.ErrNotAcquired))
	time.Sleep(200 * time.Millisecond) // build the derived index; readers are served meanwhile
	v, err := rdb.HGet(rheld, key, "version").Result()
	fmt.Fprintf(out, "refresher: built the index from the entry it wrote: v%s\n", v)
	phase.Store(3) // the phase changes under the lock, as readers read it under theirs
	return errors.Join(err, rw.RUnlock(rheld))
}
