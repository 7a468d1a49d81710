package conn_test

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
)

// Workers are reused: rounds of 4 calls, one after another, start about
// 4 goroutines in all, not 4 a round.
func TestWorkersAreReused(t *testing.T) {
	p := conn.NewPool(200 * time.Millisecond)
	const rounds = 20
	for range rounds {
		var wg sync.WaitGroup
		for range 4 {
			wg.Add(1)
			p.Go(wg.Done)
		}
		wg.Wait()
		time.Sleep(5 * time.Millisecond) // the workers reach their idle wait
	}
	if got := p.Started(); got < 4 || got > 8 {
		t.Fatalf("%d rounds of 4 calls started %d goroutines, want 4..8", rounds, got)
	}
}

// A call that blocks does not delay another: the second call gets a new
// goroutine at once.
func TestBlockedCallDoesNotQueue(t *testing.T) {
	p := conn.NewPool(10 * time.Millisecond)
	release := make(chan struct{})
	started := make(chan struct{})
	p.Go(func() { close(started); <-release })
	<-started
	done := make(chan struct{})
	p.Go(func() { close(done) })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the second call waited for the blocked one")
	}
	close(release)
}

// Idle workers end after the linger: no goroutine is left.
func TestIdleWorkersEnd(t *testing.T) {
	before := runtime.NumGoroutine()
	p := conn.NewPool(5 * time.Millisecond)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		p.Go(wg.Done)
	}
	wg.Wait()
	waitFor(t, func() bool { return runtime.NumGoroutine() <= before })
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in 5s")
		}
		time.Sleep(time.Millisecond)
	}
}

// For gives one Pool per client, the same on every call.
func TestForIsPerClient(t *testing.T) {
	a := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer a.Close()
	b := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer b.Close()
	pool := conn.PoolFor(conn.Of(a))
	if conn.PoolFor(conn.Of(a)) != pool {
		t.Fatal("two pools for one client")
	}
	if conn.PoolFor(conn.Of(a)) == conn.PoolFor(conn.Of(b)) {
		t.Fatal("one pool for two clients")
	}
	done := make(chan struct{})
	conn.PoolFor(conn.Of(a)).Go(func() { close(done) })
	<-done
}
