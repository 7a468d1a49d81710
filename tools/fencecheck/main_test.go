package fencecheck

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/fence"
	"github.com/relock-go/relock/lock"
)

// TestMain runs the holder when the test binary is started as one (by
// the pause tests), and stops the shared PostgreSQL after the tests.
func TestMain(m *testing.M) {
	if os.Getenv("FENCECHECK_HOLDER") != "" {
		if err := holder(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	stopPostgres()
	os.Exit(code)
}

// holder is the first holder of the pause tests, in a process of its
// own: it takes the lock FENCECHECK_LOCK with a 1 s lease kept by the
// watchdog, prepares its write (with FENCECHECK_TX, begins the
// transaction and reads), says "ready <token>", and waits for a line on
// stdin, during which the test stops it (SIGSTOP) past its lease. Then it
// makes its write with its old token and says "result ok" or "result
// stale|error <err>".
func holder() error {
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("FENCECHECK_REDIS")})
	defer rdb.Close()
	mu := lock.New(rdb, os.Getenv("FENCECHECK_LOCK"), lock.WithWatchdogTimeout(time.Second))
	held, err := mu.Lock(ctx)
	if err != nil {
		return err
	}
	token, _ := lock.FencingToken(held)
	write, err := prepare(ctx, os.Getenv("FENCECHECK_HOLDER"), os.Getenv("FENCECHECK_RESOURCE"), token)
	if err != nil {
		return err
	}
	fmt.Printf("ready %d held=%v\n", token, held.Err() == nil)
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	switch err := write(); {
	case err == nil:
		fmt.Println("result ok")
	case errors.Is(err, fence.ErrStale):
		fmt.Println("result stale", err)
	default:
		fmt.Println("result error", err)
	}
	return nil
}

// prepare returns the holder's write of "A" with token to resource.
func prepare(ctx context.Context, kind, resource string, token int64) (func() error, error) {
	dsn, tx := os.Getenv("FENCECHECK_DSN"), os.Getenv("FENCECHECK_TX") != ""
	switch kind {
	case "sqlite", "postgres":
		d := fence.SQLite
		if kind == "postgres" {
			d = fence.PostgreSQL
		}
		s, err := dialSQL(d, dsn)
		if err != nil {
			return nil, err
		}
		if !tx {
			return func() error { return s.write(ctx, resource, token, "A") }, nil
		}
		t, err := s.begin(ctx, resource)
		if err != nil {
			return nil, err
		}
		return func() error { return s.finish(ctx, t, resource, token, "A") }, nil
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: os.Getenv("FENCECHECK_REDIS")})
		g := fence.NewRedis(rdb)
		return func() error { return g.Set(ctx, resource, token, "A", 0) }, nil
	case "http":
		c := httpClient()
		return func() error { return postWrite(ctx, c, os.Getenv("FENCECHECK_URL")+"/"+resource, token, "A") }, nil
	}
	return nil, errors.New("unknown holder kind " + strconv.Quote(kind))
}
