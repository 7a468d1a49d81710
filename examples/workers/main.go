// Command workers shows bounded concurrency across OS processes: a
// semaphore of 2 permits shared by worker processes that this program starts
// from its own executable (with RELOCK_WORKER set, it runs as a worker).
//
// First one worker takes a permit and dies without releasing it: permits are
// leases, so its permit stays taken only until its lease runs out (1 s here;
// the watchdog of a live worker would have renewed it). Then 4 workers run 4
// jobs each, a permit per job. Every job counts itself in and out of a Redis
// counter that also records its highest value: it never exceeds 2.
//
//	go run ./examples/workers                           # embedded miniredis
//	REDIS_ADDR=127.0.0.1:6379 go run ./examples/workers # a real Redis
//
// The workers reach the embedded miniredis over TCP like any other client.
package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/examples/internal/exredis"
	"github.com/relock-go/relock/semaphore"
)

const (
	workerEnv = "RELOCK_WORKER" // set in a worker process: its name
	permits   = 2
	prefix    = "examples:workers:"
)

// countIn counts a job in and keeps the highest count seen, in one step.
var countIn = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n > tonumber(redis.call('GET', KEYS[2]) or '0') then redis.call('SET', KEYS[2], n) end
return n`)

func main() {
	exe, err := os.Executable()
	if err == nil {
		err = run(context.Background(), os.Stdout, exe)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// run is the parent, which starts exe as the workers, or a worker when
// RELOCK_WORKER is set.
func run(ctx context.Context, out io.Writer, exe string) error {
	if name := os.Getenv(workerEnv); name != "" {
		return work(ctx, out, name)
	}
	srv, err := exredis.Open(out)
	if err != nil {
		return err
	}
	defer srv.Close()
	rdb := srv.Client()
	defer rdb.Close()
	if err := rdb.Del(ctx, prefix+"running", prefix+"max", prefix+"done").Err(); err != nil {
		return err
	}
	start := func(name string) (*exec.Cmd, *bytes.Buffer, error) {
		var buf bytes.Buffer
		cmd := exec.CommandContext(ctx, exe)
		cmd.Env = append(os.Environ(), workerEnv+"="+name, "REDIS_ADDR="+srv.Addr)
		cmd.Stdout, cmd.Stderr = &buf, &buf
		return cmd, &buf, cmd.Start()
	}

	fmt.Fprintln(out, "A worker process takes a permit and dies without releasing it.")
	cmd, buf, err := start("crash")
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("crashing worker: %w: %s", err, buf)
	}
	sem := newSemaphore(rdb)
	free, err := sem.Available(ctx)
	fmt.Fprintf(out, "  permits free: %d of %d, until the dead worker's lease runs out\n\n", free, permits)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "4 worker processes run 4 jobs each, at most %d at once:\n", permits)
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := range 4 {
		cmd, buf, err := start(fmt.Sprint("worker ", i+1))
		if err != nil {
			return err
		}
		cmds, outs = append(cmds, cmd), append(outs, buf)
	}
	for i, cmd := range cmds {
		err = errors.Join(err, cmd.Wait())
		fmt.Fprintf(out, "  %s", outs[i]) // the workers' outputs in a fixed order
	}
	if err != nil {
		return err
	}
	done, _ := rdb.Get(ctx, prefix+"done").Int()
	most, _ := rdb.Get(ctx, prefix+"max").Int()
	free, err = sem.Available(ctx)
	fmt.Fprintf(out, "jobs done: %d; most running at once: %d; permits free now: %d of %d\n", done, most, free, permits)
	return err
}

func newSemaphore(rdb *redis.Client) *semaphore.Semaphore {
	// A short lease so that a dead worker's permit comes back soon; a live
	// worker's watchdog renews it every third of that.
	return semaphore.New(rdb, prefix+"sem", permits, semaphore.WithWatchdogTimeout(time.Second))
}

// work is a worker process: "crash" takes a permit and exits at once;
// the others run their jobs.
func work(ctx context.Context, out io.Writer, name string) error {
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("REDIS_ADDR")})
	defer rdb.Close()
	sem := newSemaphore(rdb)
	if name == "crash" {
		if _, err := sem.Acquire(ctx, 1); err != nil {
			return err
		}
		os.Exit(0) // dies holding the permit: no Release, no more renewals
	}
	for range 4 {
		held, err := sem.Acquire(ctx, 1) // waits for a permit
		if err != nil {
			return err
		}
		if err := countIn.Run(held, rdb, []string{prefix + "running", prefix + "max"}).Err(); err != nil {
			return errors.Join(err, sem.Release(held))
		}
		time.Sleep(100 * time.Millisecond) // the job
		err = rdb.Decr(held, prefix+"running").Err()
		err = errors.Join(err, rdb.Incr(held, prefix+"done").Err(), sem.Release(held))
		if err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "%s: 4 jobs done\n", name)
	return nil
}
