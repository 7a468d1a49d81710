//go:build faults

package faults

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/redis/go-redis/v9"
	"github.com/rs/zerolog"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/redlock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

// locker is what every primitive under test offers, as one exclusive side:
// a semaphore of one permit, one side of an RWMutex, a Redlock.
type locker interface {
	Lock(ctx context.Context) (context.Context, error)
	TryLock(ctx context.Context) (context.Context, error)
	Unlock(ctx context.Context) error
}

// sides adapts a primitive whose acquisitions take options of its own
// package (O) to locker; the cases give none per acquisition.
type sides[O any] struct {
	lock, tryLock func(context.Context, ...O) (context.Context, error)
	unlock        func(context.Context) error
}

func (s sides[O]) Lock(ctx context.Context) (context.Context, error)    { return s.lock(ctx) }
func (s sides[O]) TryLock(ctx context.Context) (context.Context, error) { return s.tryLock(ctx) }
func (s sides[O]) Unlock(ctx context.Context) error                     { return s.unlock(ctx) }

// semLocker is a semaphore of size 1 taken one permit at a time, so that
// its holders exclude each other as a mutex's do.
type semLocker struct{ s *semaphore.Semaphore }

func (l semLocker) Lock(ctx context.Context) (context.Context, error) {
	return l.s.Acquire(ctx, 1)
}
func (l semLocker) TryLock(ctx context.Context) (context.Context, error) {
	return l.s.TryAcquire(ctx, 1)
}
func (l semLocker) Unlock(ctx context.Context) error { return l.s.Release(ctx) }

// makeFn builds one side of a primitive called name on one client per
// master, with the watchdog timeout given (the default without one).
type makeFn func(cs []redis.UniversalClient, name string, watchdogTimeout ...time.Duration) locker

func mutexOn(cs []redis.UniversalClient, name string, wdt ...time.Duration) locker {
	mu := lock.New(cs[0], name, typed[lock.Option](wdt, lock.WithWatchdogTimeout)...)
	return sides[lock.LockOption]{mu.Lock, mu.TryLock, mu.Unlock}
}

func readOn(cs []redis.UniversalClient, name string, wdt ...time.Duration) locker {
	s := rwlock.New(cs[0], name, typed[rwlock.Option](wdt, rwlock.WithWatchdogTimeout)...).ReadLocker()
	return sides[rwlock.LockOption]{s.Lock, s.TryLock, s.Unlock}
}

func writeOn(cs []redis.UniversalClient, name string, wdt ...time.Duration) locker {
	s := rwlock.New(cs[0], name, typed[rwlock.Option](wdt, rwlock.WithWatchdogTimeout)...).WriteLocker()
	return sides[rwlock.LockOption]{s.Lock, s.TryLock, s.Unlock}
}

func semOn(cs []redis.UniversalClient, name string, wdt ...time.Duration) locker {
	return semLocker{semaphore.New(cs[0], name, 1, typed[semaphore.Option](wdt, semaphore.WithWatchdogTimeout)...)}
}

func redlockOn(cs []redis.UniversalClient, name string, wdt ...time.Duration) locker {
	members := make([]redlock.Member, len(cs))
	for i, c := range cs {
		members[i] = lock.New(c, name, typed[lock.Option](wdt, lock.WithWatchdogTimeout)...)
	}
	rl := redlock.New(members, typed[redlock.Option](wdt, redlock.WithWatchdogTimeout)...)
	return sides[redlock.LockOption]{rl.Lock, rl.TryLock, rl.Unlock}
}

// typed makes each package's option of the durations given.
func typed[O, C any](ds []time.Duration, with func(time.Duration) C) []O {
	out := make([]O, len(ds))
	for i, d := range ds {
		out[i] = any(with(d)).(O)
	}
	return out
}

// prim is one primitive under test: side a is the one the case is named
// after (it holds in the holding tests and waits in the waiting ones),
// side b is one that conflicts with it.
type prim struct {
	name    string
	masters int
	a, b    makeFn
}

var prims = []prim{
	{"lock", 1, mutexOn, mutexOn},
	{"rwlock-read", 1, readOn, writeOn},
	{"rwlock-write", 1, writeOn, readOn},
	{"semaphore", 1, semOn, semOn},
	{"redlock", 3, redlockOn, redlockOn},
}

// toxiServer hosts the in-process proxies; metrics and logs off.
var toxiServer = toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop())

// netProxy is a toxiproxy between clients and one redis-server, on loopback.
type netProxy struct {
	p    *toxiproxy.Proxy
	Addr string
}

func newProxy(t testing.TB, upstream string) *netProxy {
	t.Helper()
	p := toxiproxy.NewProxy(toxiServer, "redis-"+upstream, "127.0.0.1:0", upstream)
	if err := p.Start(); err != nil {
		t.Fatalf("start toxiproxy to %s: %v", upstream, err)
	}
	// Start has set Listen to the port it bound; heal listens there again.
	np := &netProxy{p: p, Addr: p.Listen}
	t.Cleanup(p.Stop)
	return np
}

// latency delays every byte by d in both directions.
func (np *netProxy) latency(t testing.TB, d time.Duration) {
	t.Helper()
	for _, stream := range []string{"upstream", "downstream"} {
		js := fmt.Sprintf(`{"name":"latency_%s","type":"latency","stream":%q,"attributes":{"latency":%d}}`,
			stream, stream, d.Milliseconds())
		if _, err := np.p.Toxics.AddToxicJson(strings.NewReader(js)); err != nil {
			t.Fatalf("add latency toxic: %v", err)
		}
	}
}

func (np *netProxy) clear() { np.p.Toxics.ResetToxics(context.Background()) }

// partition disables the proxy: its connections are closed and new ones
// refused, as when a link goes down.
func (np *netProxy) partition() { np.p.Stop() }

func (np *netProxy) heal(t testing.TB) {
	t.Helper()
	if err := np.p.Start(); err != nil {
		t.Fatalf("re-enable toxiproxy on %s: %v", np.Addr, err)
	}
}

// env is one test's Redis: masters, optional proxies in front of them, and
// clients straight to them and through the proxies.
type env struct {
	servers []*redistest.Server
	proxies []*netProxy
	direct  []redis.UniversalClient
	proxied []redis.UniversalClient
}

func newEnv(t testing.TB, masters int, proxied bool) *env {
	t.Helper()
	e := &env{servers: redistest.StartServers(t, masters)}
	if len(e.servers) != masters {
		t.Fatalf("started %d redis-servers, want %d", len(e.servers), masters)
	}
	for _, s := range e.servers {
		e.direct = append(e.direct, newClient(t, s.Addr))
		if proxied {
			p := newProxy(t, s.Addr)
			e.proxies = append(e.proxies, p)
			e.proxied = append(e.proxied, newClient(t, p.Addr))
		}
	}
	return e
}

// clients returns another set of clients straight to the masters: another
// process, as far as relock can tell (its own pub/sub hub and local queue).
func (e *env) clients(t testing.TB) []redis.UniversalClient {
	cs := make([]redis.UniversalClient, len(e.servers))
	for i, s := range e.servers {
		cs[i] = newClient(t, s.Addr)
	}
	return cs
}

func (e *env) latency(t testing.TB, d time.Duration) {
	for _, p := range e.proxies {
		p.latency(t, d)
	}
}

func (e *env) clear() {
	for _, p := range e.proxies {
		p.clear()
	}
}

func (e *env) partition() {
	for _, p := range e.proxies {
		p.partition()
	}
}

func (e *env) heal(t testing.TB) {
	for _, p := range e.proxies {
		p.heal(t)
	}
}

// newClient returns a client with short network timeouts, so that calls
// into a fault end in about a second, and context deadlines applied to
// the network (as the README advises for bounded calls).
func newClient(t testing.TB, addr string) *redis.Client {
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           time.Second,
		ReadTimeout:           time.Second,
		WriteTimeout:          time.Second,
		ContextTimeoutEnabled: true,
	})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// lockName is a lock name unique to the test.
func lockName(t testing.TB) string {
	return "faults:" + strings.NewReplacer("/", ":", " ", "_").Replace(t.Name())
}

// checkLeaks fails the test if goroutines it started outlive it. Called
// first, so that its cleanup runs last: after clients, proxies and servers
// are closed.
func checkLeaks(t *testing.T) {
	t.Helper()
	ignore := []goleak.Option{goleak.IgnoreCurrent(), ignoreToxiproxy}
	t.Cleanup(func() {
		// Longer than goleak's own retries: go-redis's pool probes a
		// server it failed to dial once a second until the pool closes,
		// and a release (a Redlock member's give-back) begun during a
		// partition retries for twice the unlock timeout, 10 s, against
		// the servers the cleanup closed, then ends by itself.
		deadline := time.Now().Add(13 * time.Second)
		for {
			err := goleak.Find(ignore...)
			if err == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutines outlived the test: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
}

// endWatch records when a hold's context ends: when its holder is told.
type endWatch struct {
	ctx  context.Context
	done chan struct{}
	at   time.Time
}

func watchEnd(ctx context.Context) *endWatch {
	w := &endWatch{ctx: ctx, done: make(chan struct{})}
	context.AfterFunc(ctx, func() {
		w.at = time.Now()
		close(w.done)
	})
	return w
}

// told waits up to d for the hold to end and checks that it ended with
// ErrLockLost; it returns when.
func (w *endWatch) told(t testing.TB, who string, d time.Duration) time.Time {
	t.Helper()
	select {
	case <-w.done:
	case <-time.After(d):
		t.Fatalf("%s: not told of the loss within %v", who, d)
	}
	if cause := context.Cause(w.ctx); !errors.Is(cause, lock.ErrLockLost) {
		t.Fatalf("%s: hold ended with cause %v, want ErrLockLost", who, cause)
	}
	return w.at
}

// isLost reports whether err matches ErrLockLost.
func isLost(err error) bool { return errors.Is(err, lock.ErrLockLost) }

// result is what a waiting acquire returned, and when.
type result struct {
	held context.Context
	err  error
	at   time.Time
}

// goLock starts l.Lock(ctx) and delivers its result.
func goLock(ctx context.Context, l locker, wg *sync.WaitGroup) <-chan result {
	ch := make(chan result, 1)
	wg.Add(1)
	go func() {
		defer wg.Done()
		held, err := l.Lock(ctx)
		ch <- result{held, err, time.Now()}
	}()
	return ch
}

// await waits up to d for a result.
func await(t testing.TB, who string, ch <-chan result, d time.Duration) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("%s: no result within %v", who, d)
		return result{}
	}
}

// interval is one owner's hold as the owner saw it: from the moment its
// acquire returned to the moment it was told the hold ended (or let go).
type interval struct {
	who      string
	from, to time.Time
}

// checkNoOverlap fails when two intervals overlap: two owners acted on the
// lock at once.
func checkNoOverlap(t testing.TB, ivs ...interval) {
	t.Helper()
	for i := range ivs {
		for j := i + 1; j < len(ivs); j++ {
			a, b := ivs[i], ivs[j]
			if a.from.Before(b.to) && b.from.Before(a.to) {
				t.Errorf("holds overlap: %s held %s..%s, %s held %s..%s",
					a.who, a.from.Format("15:04:05.000"), a.to.Format("15:04:05.000"),
					b.who, b.from.Format("15:04:05.000"), b.to.Format("15:04:05.000"))
			}
		}
	}
}

// checkNamed checks that err names an operation and the lock called name.
func checkNamed(t testing.TB, err error, name string) {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || e.Op == "" || !strings.Contains(e.Name, name) ||
		!strings.Contains(err.Error(), fmt.Sprintf("%q", e.Name)) {
		t.Errorf("error %q does not name the operation and the lock %q", err, name)
	}
}

// waitFor polls cond until it holds or d passes.
func waitFor(t testing.TB, what string, d time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitSubscribed waits until a waiter's pub/sub connection is on every
// master: the waiters then wait on their unlock message.
func waitSubscribed(t testing.TB, admin []redis.UniversalClient) {
	t.Helper()
	for _, c := range admin {
		waitFor(t, "a pub/sub subscription", 5*time.Second, func() bool {
			n, err := redistest.CountPubSubConns(context.Background(), c.(*redis.Client))
			return err == nil && n > 0
		})
	}
}

// retryUntil runs f until it returns nil or d passes, for calls made while
// a client reconnects after a fault; it returns the last error.
func retryUntil(d time.Duration, f func() error) error {
	deadline := time.Now().Add(d)
	for {
		err := f()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}
