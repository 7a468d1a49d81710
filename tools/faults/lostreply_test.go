//go:build faults

package faults

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestFaultLostAcquireReply delays or drops the replies of Redis (not the
// requests) past the client's read timeout, so that TryLock's script runs
// but its reply never arrives in time, and go-redis sends it again (its
// MaxRetries) into the same fault. TryLock must fail, and the grant left
// in Redis must be given back as soon as the link works again: another
// owner, waiting all along on a direct link, gets in within a couple of
// seconds, not after the 30 s lease.
func TestFaultLostAcquireReply(t *testing.T) {
	toxics := []struct{ name, json string }{
		{"delayed", `{"name":"replies","type":"latency","stream":"downstream","attributes":{"latency":1500}}`},
		{"dropped", `{"name":"replies","type":"timeout","stream":"downstream","attributes":{"timeout":0}}`},
	}
	for _, tx := range toxics {
		for _, p := range prims {
			if p.masters != 1 {
				continue // a Redlock gives members back on their own (redlock's tests)
			}
			t.Run(tx.name+"/"+p.name, func(t *testing.T) { testLostAcquireReply(t, p, tx.json) })
		}
	}
}

func testLostAcquireReply(t *testing.T, p prim, toxic string) {
	checkLeaks(t)
	e := newEnv(t, 1, true)
	name := lockName(t)
	holder := p.a(e.proxied, name)
	other := p.b(e.direct, name)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The other owner waits for the lock: hold it first, then
	// queue behind it and release it.
	first, err := other.Lock(ctx)
	if err != nil {
		t.Fatalf("other owner: %v", err)
	}
	if err := other.Unlock(first); err != nil {
		t.Fatalf("other owner's unlock: %v", err)
	}

	// The holder's connection is made and its scripts loaded (a
	// handshake or a NOSCRIPT is not what times out), then replies
	// are delayed past the client's 1 s read timeout, or dropped.
	warm, err := holder.TryLock(ctx)
	if err != nil {
		t.Fatalf("holder: %v", err)
	}
	if err := holder.Unlock(warm); err != nil {
		t.Fatalf("holder's unlock: %v", err)
	}
	if _, err := e.proxies[0].p.Toxics.AddToxicJson(strings.NewReader(toxic)); err != nil {
		t.Fatalf("add toxic: %v", err)
	}
	start := time.Now()
	_, err = holder.TryLock(ctx)
	failed := time.Now()
	if err == nil || !strings.Contains(err.Error(), "timeout") {
		t.Fatalf("TryLock with lost replies: got %v, want a timeout", err)
	}
	checkNamed(t, err, name)
	if n := e.direct[0].Exists(ctx, name).Val(); n != 1 {
		t.Fatalf("the script did not run: the lock is not in Redis")
	}
	t.Logf("TryLock failed after %v: %v", failed.Sub(start).Round(time.Millisecond), err)
	e.clear()

	var wg sync.WaitGroup
	defer wg.Wait()
	got := goLock(ctx, other, &wg)
	r := await(t, "other owner", got, 10*time.Second)
	if r.err != nil {
		t.Fatalf("other owner after the lost reply: %v", r.err)
	}
	wait := r.at.Sub(failed)
	t.Logf("the other owner got in %v after TryLock failed", wait.Round(time.Millisecond))
	if wait > 5*time.Second {
		t.Fatalf("the grant of the lost reply was kept %v: not given back", wait)
	}
	if err := other.Unlock(r.held); err != nil {
		t.Fatalf("other owner's unlock: %v", err)
	}
	keys, err := e.direct[0].Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		ttl := e.direct[0].PTTL(ctx, k).Val()
		if ttl < 0 {
			t.Errorf("key %s left without a TTL", k)
		}
	}
}
