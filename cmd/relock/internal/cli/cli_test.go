package cli_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/cmd/relock/internal/cli"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
	"github.com/relock-go/relock/rwlock"
	"github.com/relock-go/relock/semaphore"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }

// Fixed owners, given to the library through the context.
const (
	ownerA = "aaaaaaaa-aaaa-4aaa-8aaa-aaaaaaaaaaaa:1"
	ownerB = "bbbbbbbb-bbbb-4bbb-8bbb-bbbbbbbbbbbb:2"
	ownerC = "cccccccc-cccc-4ccc-8ccc-cccccccccccc:3"
	ownerD = "dddddddd-dddd-4ddd-8ddd-dddddddddddd:4"
)

const lease = time.Minute

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// coarseTTL rounds a TTL up to 10 s, so that a 60 s lease read a few
// seconds after it was set is "~60s" however slow the run.
func coarseTTL(ms int64) string { return "~" + strconv.FormatInt((ms+9999)/10000*10, 10) + "s" }

var permitRE = regexp.MustCompile(regexp.QuoteMeta(core.ProcessID()) + `:r[0-9]+`)

// masker replaces the ids the library mints (semaphore permits and
// waiters: <process uuid>:r<n>) by PERMIT-1, PERMIT-2... in order of first
// appearance.
type masker struct {
	mu   sync.Mutex
	seen map[string]string
}

func (m *masker) id(s string) string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return permitRE.ReplaceAllStringFunc(s, func(p string) string {
		if m.seen == nil {
			m.seen = map[string]string{}
		}
		if v, ok := m.seen[p]; ok {
			return v
		}
		v := "PERMIT-" + strconv.Itoa(len(m.seen)+1)
		m.seen[p] = v
		return v
	})
}

var (
	agoRE = regexp.MustCompile(`expired [0-9.]+m?s ago`)
	// tokenRE matches the fencing tokens the library draws from the
	// server's clock (microseconds since 1970: 16 digits until 2286).
	tokenRE = regexp.MustCompile(`\b1[0-9]{15}\b`)
	msRE    = regexp.MustCompile(`"(ttl_ms|lease_ms|mark_ms)": ([0-9]+)`)
	tailRE  = regexp.MustCompile(`[ \t]+\n`)
)

// maskJSON rounds the positive milliseconds of the JSON output to 10 s.
func maskJSON(s string) string {
	return msRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := msRE.FindStringSubmatch(m)
		ms, _ := strconv.ParseInt(sub[2], 10, 64)
		if ms > 0 {
			ms = (ms + 9999) / 10000 * 10000
		}
		return `"` + sub[1] + `": ` + strconv.FormatInt(ms, 10)
	})
}

type result struct {
	code           int
	stdout, stderr string
}

type runner struct {
	t           *testing.T
	env         map[string]string
	m           *masker
	interactive bool
}

func newRunner(t *testing.T) *runner { return &runner{t: t, env: map[string]string{}, m: &masker{}} }

func (r *runner) run(stdin string, args ...string) result {
	r.t.Helper()
	var out, errOut bytes.Buffer
	app := &cli.App{
		Stdin:       strings.NewReader(stdin),
		Stdout:      &out,
		Stderr:      &errOut,
		Getenv:      func(k string) string { return r.env[k] },
		Interactive: r.interactive,
		TTL:         coarseTTL,
		ID:          r.m.id,
	}
	code := app.Run(testCtx(r.t), args)
	mask := func(s string) string {
		s = r.m.id(s)
		s = agoRE.ReplaceAllString(s, "expired <d> ago")
		s = tokenRE.ReplaceAllString(s, "<token>")
		return maskJSON(s)
	}
	return result{code: code, stdout: mask(out.String()), stderr: mask(errOut.String())}
}

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name string, res result, wantCode int) {
	t.Helper()
	got := "$ exit " + strconv.Itoa(res.code) + "\n" + res.stdout
	if res.stderr != "" {
		got += "--- stderr\n" + res.stderr
	}
	got = tailRE.ReplaceAllString(got, "\n")
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: output differs from %s (go test -update rewrites it)\n--- got\n%s--- want\n%s", name, path, got, want)
	}
	if res.code != wantCode {
		t.Errorf("%s: exit %d, want %d", name, res.code, wantCode)
	}
}

// holds is the scene every listing test starts from: two locks (one
// re-entered), a lock whose name has its own hash tag, an rwlock with two
// readers and a waiting writer, an rwlock held for writing, a semaphore
// with two acquisitions, and keys that are not ours. The channel it
// returns is closed when the waiting writer has had doc:1 and let it go.
func holds(t *testing.T, c redis.UniversalClient) <-chan struct{} {
	ctx := testCtx(t)
	base := context.Background()
	var release []func()
	t.Cleanup(func() {
		for i := len(release) - 1; i >= 0; i-- {
			release[i]()
		}
	})
	must := func(held context.Context, err error) context.Context {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return held
	}
	opt := lock.WithLeaseTime(lease)

	m1 := lock.New(c, "order:1", opt, lock.WithHolderLabel("pod-7"))
	h1 := must(m1.Lock(core.WithOwner(base, ownerA)))
	h1b := must(m1.Lock(h1)) // re-entry: count 2
	release = append(release, func() { _ = m1.Unlock(h1b); _ = m1.Unlock(h1) })
	m2 := lock.New(c, "order:2", opt)
	h2 := must(m2.Lock(core.WithOwner(base, ownerB)))
	release = append(release, func() { _ = m2.Unlock(h2) })
	m3 := lock.New(c, "{tenant7}:invoice", opt)
	h3 := must(m3.Lock(core.WithOwner(base, ownerC)))
	release = append(release, func() { _ = m3.Unlock(h3) })

	rw := rwlock.New(c, "doc:1", rwlock.WithLeaseTime(lease))
	r1 := must(rw.RLock(core.WithOwner(base, ownerA)))
	r1b := must(rw.RLock(r1))
	r2 := must(rw.RLock(core.WithOwner(base, ownerB)))
	release = append(release, func() { _ = rw.RUnlock(r1b); _ = rw.RUnlock(r1); _ = rw.RUnlock(r2) })
	// a writer waits behind the readers; its mark is a waiter
	wctx, stopWriter := context.WithCancel(core.WithOwner(base, ownerD))
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		if held, err := rwlock.New(c, "doc:1", rwlock.WithLeaseTime(lease)).Lock(wctx); err == nil {
			_ = rw.Unlock(held)
		}
	}()
	release = append(release, func() { stopWriter(); <-writerDone })
	waitFor(t, func() bool { return c.ZCard(ctx, "{doc:1}:rwlock_write_waiters").Val() == 1 })

	rw2 := rwlock.New(c, "doc:2", rwlock.WithLeaseTime(lease))
	w := must(rw2.Lock(core.WithOwner(base, ownerC)))
	release = append(release, func() { _ = rw2.Unlock(w) })

	s1 := semaphore.New(c, "pool", 5, semaphore.WithLeaseTime(lease))
	p1 := must(s1.Acquire(core.WithOwner(base, ownerA), 2))
	s2 := semaphore.New(c, "pool", 5, semaphore.WithLeaseTime(2*lease))
	p2 := must(s2.Acquire(core.WithOwner(base, ownerB), 1))
	release = append(release, func() { _ = s1.Release(p1); _ = s2.Release(p2) })

	// not ours: left out
	if err := c.HSet(ctx, "user:42", "name", "bob").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
		t.Fatal(err)
	}
	dropLatches(t, c)
	return writerDone
}

// dropLatches deletes the latches the scene's calls left, which live a few
// seconds: the goldens must not depend on how long the test took.
// TestShowListsLabelsLatchesAndElectionRecord shows them.
func dropLatches(t *testing.T, c redis.UniversalClient) {
	ctx := testCtx(t)
	for _, p := range []string{"relock_acquire_latch:*", "redisson_unlock_latch:*"} {
		ks, err := redistest.Keys(ctx, c, p)
		if err != nil {
			t.Fatal(err)
		}
		for _, k := range ks {
			if err := c.Del(ctx, k).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestListAndShow(t *testing.T) {
	s := redistest.StartServer(t)
	c := s.Client(t)
	holds(t, c)
	r := newRunner(t)
	a := []string{"--addr", s.Addr}

	golden(t, "ls", r.run("", append(a, "ls")...), 0)
	golden(t, "ls_json", r.run("", append([]string{"ls", "--json"}, a...)...), 0)
	golden(t, "ls_pattern", r.run("", append([]string{"ls", "order:*"}, a...)...), 0)
	golden(t, "ls_none", r.run("", append([]string{"ls", "nothing:*"}, a...)...), 0)
	golden(t, "show_lock", r.run("", append([]string{"show", "order:1"}, a...)...), 0)
	golden(t, "show_tagged", r.run("", append([]string{"show", "{tenant7}:invoice"}, a...)...), 0)
	golden(t, "show_rwlock", r.run("", append([]string{"show", "doc:1"}, a...)...), 0)
	golden(t, "show_semaphore", r.run("", append([]string{"show", "pool"}, a...)...), 0)
	golden(t, "show_json", r.run("", append([]string{"show", "--json", "doc:2"}, a...)...), 0)
	golden(t, "show_missing", r.run("", append([]string{"show", "user:42"}, a...)...), 1)
	golden(t, "leaks_clean", r.run("", append([]string{"leaks"}, a...)...), 0)
}

func TestLeaks(t *testing.T) {
	s := redistest.StartServer(t)
	c := s.Client(t)
	ctx := testCtx(t)
	base := context.Background()

	// a healthy lock: not a leak (its token counter has a TTL)
	m := lock.New(c, "ok:1", lock.WithLeaseTime(lease))
	held, err := m.Lock(core.WithOwner(base, ownerA))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unlock(held) })

	// by hand: a lock hash that lost its TTL, an unlock latch without TTL,
	// an rwlock lease key whose hash is gone, a fencing counter an older
	// version left without a TTL, one with a TTL above a day
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(c.HSet(ctx, "leak:1", ownerB, 3).Err())
	must(c.Set(ctx, "redisson_unlock_latch:{leak:1}:"+ownerB+":r9", 1, 0).Err())
	must(c.Set(ctx, "{gone}:"+ownerC+":rwlock_timeout:1", 1, lease).Err())
	must(c.Set(ctx, "redisson_lock_token:{old:1}", 42, 0).Err())
	must(c.Set(ctx, "redisson_lock_token:{old:2}", 42, 48*time.Hour).Err())

	// real dead owners: a reader whose short lease ran out while another
	// reader keeps the hash alive, and a semaphore permit that expired
	rwShort := rwlock.New(c, "doc:9", rwlock.WithLeaseTime(100*time.Millisecond))
	if _, err := rwShort.RLock(core.WithOwner(base, ownerC)); err != nil {
		t.Fatal(err)
	}
	rwLong := rwlock.New(c, "doc:9", rwlock.WithLeaseTime(lease))
	r, err := rwLong.RLock(core.WithOwner(base, ownerD))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rwLong.RUnlock(r) })
	// (another permit keeps the semaphore's keys alive: alone, they would
	// expire with the dead one)
	sem := semaphore.New(c, "pool:9", 3, semaphore.WithLeaseTime(100*time.Millisecond))
	if _, err := sem.Acquire(core.WithOwner(base, ownerA), 2); err != nil {
		t.Fatal(err)
	}
	semLong := semaphore.New(c, "pool:9", 3, semaphore.WithLeaseTime(lease))
	p, err := semLong.Acquire(core.WithOwner(base, ownerD), 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = semLong.Release(p) })
	time.Sleep(300 * time.Millisecond)

	rn := newRunner(t)
	a := []string{"--addr", s.Addr}
	golden(t, "leaks", rn.run("", append([]string{"leaks"}, a...)...), 3)
	golden(t, "leaks_json", rn.run("", append([]string{"leaks", "--json"}, a...)...), 3)
	golden(t, "leaks_pattern", rn.run("", append([]string{"leaks", "ok:*"}, a...)...), 0)
	golden(t, "ls_leaky", rn.run("", append([]string{"ls"}, a...)...), 0)
}

// waiter starts a Lock of name on another client (another process) and
// returns a channel that reports when it got the lock.
func waiter(t *testing.T, c redis.UniversalClient, name string) <-chan time.Time {
	got := make(chan time.Time, 1)
	ctx, cancel := context.WithCancel(core.WithOwner(context.Background(), ownerD))
	m := lock.New(c, name, lock.WithLeaseTime(lease), lock.WithWaitTimeout(30*time.Second))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		held, err := m.Lock(ctx)
		if err != nil {
			return
		}
		got <- time.Now()
		_ = m.Unlock(held)
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return got
}

func TestUnlock(t *testing.T) {
	s := redistest.StartServer(t)
	c := s.Client(t)
	ctx := testCtx(t)
	writerDone := holds(t, c)
	r := newRunner(t)
	a := []string{"--addr", s.Addr}

	// a waiter of order:2 in another client, woken by the force unlock
	// long before the 60 s lease would end
	got := waiter(t, s.Client(t), "order:2")
	waitFor(t, func() bool {
		n, _ := c.PubSubNumSub(ctx, "redisson_lock__channel:{order:2}").Result()
		return n["redisson_lock__channel:{order:2}"] == 1
	})

	// not a terminal, no --yes: refused
	golden(t, "unlock_refused", r.run("y\n", append([]string{"unlock", "--force", "order:2"}, a...)...), 1)
	r.interactive = true
	golden(t, "unlock_no", r.run("n\n", append([]string{"unlock", "--force", "order:2"}, a...)...), 1)
	if c.Exists(ctx, "order:2").Val() != 1 {
		t.Fatal("order:2 released without confirmation")
	}
	golden(t, "unlock_without_force", r.run("", append([]string{"unlock", "order:2"}, a...)...), 2)
	start := time.Now()
	golden(t, "unlock_yes_prompt", r.run("y\n", append([]string{"unlock", "--force", "order:2"}, a...)...), 0)
	select {
	case at := <-got:
		t.Logf("waiter woke %v after the force unlock", at.Sub(start))
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the force unlock")
	}

	// --yes: no question; an rwlock loses its readers' lease keys, a
	// semaphore its permits but not its size record
	golden(t, "unlock_rwlock", r.run("", append([]string{"unlock", "--force", "--yes", "doc:1"}, a...)...), 0)
	if ks, _ := redistest.Keys(ctx, c, "*rwlock_timeout*"); len(ks) != 0 {
		t.Errorf("lease keys left after the force unlock: %v", ks)
	}
	// the waiting writer is woken by the message on redisson_rwlock:{doc:1}
	// (its fallback timer is a third of the 60 s lease), takes the lock
	// and lets it go
	select {
	case <-writerDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiting writer was not woken by the force unlock")
	}
	golden(t, "unlock_semaphore_json", r.run("", append([]string{"--json", "unlock", "--force", "--yes", "pool"}, a...)...), 0)
	if n := c.Exists(ctx, "{pool}:permits", "{pool}:weights").Val(); n != 0 {
		t.Errorf("%d permit keys left", n)
	}
	if v := c.HGetAll(ctx, "pool").Val(); v["size"] != "5" || v["used"] != "0" {
		t.Errorf("semaphore record after the force unlock: %v, want size 5, used 0", v)
	}
	golden(t, "unlock_missing", r.run("", append([]string{"unlock", "--force", "--yes", "order:404"}, a...)...), 1)
	golden(t, "ls_after_unlock", r.run("", append([]string{"ls"}, a...)...), 0)
}

func TestCluster(t *testing.T) {
	env := redistest.ClusterBackend().New(t)
	if env == nil {
		return
	}
	c := env.U()
	holds(t, c)
	addrs := make([]string, len(env.Cluster))
	for i, s := range env.Cluster {
		addrs[i] = s.Addr
	}
	// the names live on different masters, so every one must be scanned
	slots := map[string]bool{}
	cc := c.(*redis.ClusterClient)
	for _, name := range []string{"order:1", "order:2", "{tenant7}:invoice", "doc:1", "doc:2", "pool"} {
		node, err := cc.MasterForKey(testCtx(t), name)
		if err != nil {
			t.Fatal(err)
		}
		slots[node.Options().Addr] = true
	}
	if len(slots) < 2 {
		t.Fatalf("the scene lives on %d master(s); want the names spread", len(slots))
	}
	r := newRunner(t)
	a := []string{"--cluster", "--addr", strings.Join(addrs, ",")}
	golden(t, "cluster_ls", r.run("", append([]string{"ls"}, a...)...), 0)
	golden(t, "cluster_show", r.run("", append([]string{"show", "doc:1"}, a...)...), 0)
	golden(t, "cluster_leaks", r.run("", append([]string{"leaks"}, a...)...), 0)

	// REDIS_URL with --cluster: go-redis's cluster URL (?addr= for more seeds)
	r.env["REDIS_URL"] = "redis://" + addrs[0] + "?addr=" + addrs[1]
	golden(t, "cluster_ls_pattern_url", r.run("", "--cluster", "ls", "order:*"), 0)

	// a force unlock wakes a waiter through SPUBLISH
	got := waiter(t, env.NewClient(t), "order:1")
	time.Sleep(200 * time.Millisecond) // let it subscribe (sharded: PUBSUB SHARDNUMSUB)
	waitFor(t, func() bool {
		n, _ := redistest.Subscribers(testCtx(t), c, "redisson_lock__channel:{order:1}")
		return n == 1
	})
	golden(t, "cluster_unlock", r.run("", append([]string{"unlock", "--force", "--yes", "order:1"}, a...)...), 0)
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter was not woken by the force unlock on the cluster")
	}
}

func TestRedisURL(t *testing.T) {
	s := redistest.StartServer(t)
	c := s.Client(t)
	m := lock.New(c, "order:1", lock.WithLeaseTime(lease))
	held, err := m.Lock(core.WithOwner(context.Background(), ownerA))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Unlock(held) })

	r := newRunner(t)
	r.env["REDIS_URL"] = "redis://" + s.Addr + "/0"
	golden(t, "url_ls", r.run("", "ls"), 0)
	// database 1 is empty: the URL's database is used
	r.env["REDIS_URL"] = "redis://" + s.Addr + "/1"
	golden(t, "url_ls_db1", r.run("", "ls"), 0)
	// --addr wins over REDIS_URL
	r.env["REDIS_URL"] = "redis://127.0.0.1:1/0"
	golden(t, "url_addr_wins", r.run("", "ls", "--addr", s.Addr), 0)
	golden(t, "url_bad", r.run("", "ls"), 1) // nothing listens on port 1
	r.env["REDIS_URL"] = "mysql://x"
	golden(t, "url_invalid", r.run("", "ls"), 2)
}

func TestUsage(t *testing.T) {
	r := newRunner(t)
	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"usage_none", nil, 2},
		{"usage_unknown", []string{"frobnicate"}, 2},
		{"usage_help", []string{"help"}, 0},
		{"usage_show_noname", []string{"show"}, 2},
		{"usage_ls_two", []string{"ls", "a*", "b*"}, 2},
		{"usage_bad_flag", []string{"ls", "--nope"}, 2},
		{"usage_several_addrs", []string{"ls", "--addr", "127.0.0.1:1,127.0.0.1:2"}, 2},
	} {
		golden(t, tc.name, r.run("", tc.args...), tc.code)
	}
}

func TestFormatTTL(t *testing.T) {
	for ms, want := range map[int64]string{
		5:         "5ms",
		999:       "999ms",
		29_949:    "29.9s",
		29_951:    "30s",
		90_400:    "1m30s",
		7_200_000: "2h0m0s",
	} {
		if got := cli.FormatTTL(ms); got != want {
			t.Errorf("FormatTTL(%d) = %q, want %q", ms, got, want)
		}
	}
}

// show lists a fair lock's waiters in the order they will be served.
func TestShowFairQueue(t *testing.T) {
	s := redistest.StartServer(t)
	c := s.Client(t)
	ctx := testCtx(t)
	held, err := lock.NewFair(c, "tenant:7").Lock(core.WithOwner(ctx, ownerA))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lock.NewFair(c, "tenant:7").Unlock(held) }()
	var wg sync.WaitGroup
	wctx, cancel := context.WithCancel(ctx)
	defer func() { cancel(); wg.Wait() }()
	for i, o := range []string{ownerB, ownerC} {
		wc := s.Client(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = lock.NewFair(wc, "tenant:7").Lock(core.WithOwner(wctx, o))
		}()
		for c.LLen(ctx, "redisson_lock_queue:{tenant:7}").Val() < int64(i+1) {
			time.Sleep(time.Millisecond)
		}
	}
	res := newRunner(t).run("", "show", "tenant:7", "--addr", s.Addr)
	if res.code != 0 {
		t.Fatalf("show: %d\n%s%s", res.code, res.stdout, res.stderr)
	}
	out := res.stdout
	t.Log("\n" + out)
	for _, want := range []string{"waiters (2):", "redisson_lock_queue:{tenant:7}", "redisson_lock_timeout:{tenant:7}"} {
		if !strings.Contains(out, want) {
			t.Errorf("show lacks %q", want)
		}
	}
	b, cc := strings.Index(out, ownerB), strings.Index(out, ownerC)
	if b < 0 || cc < 0 || b > cc {
		t.Errorf("waiters not listed in arrival order (B at %d, C at %d)", b, cc)
	}
	ls := newRunner(t).run("", "ls", "--addr", s.Addr)
	if strings.Contains(ls.stdout, "relock_fair_waiter") {
		t.Errorf("ls lists the waiters hash as a lock:\n%s", ls.stdout)
	}
	leaks := newRunner(t).run("", "leaks", "--addr", s.Addr)
	if leaks.code != 0 {
		t.Errorf("leaks: %d\n%s", leaks.code, leaks.stdout)
	}
}
