package redistest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// sharedMasters is the size of the cluster the behaviour suites share.
const sharedMasters = 3

// TestingM is what testing.M and goleak.VerifyTestMain share.
type TestingM interface{ Run() int }

type mainRunner struct{ m TestingM }

// Run runs the tests, then stops the shared cluster if a test started it,
// before the caller (goleak) looks for leftover goroutines.
func (r mainRunner) Run() int {
	shared.mu.Lock()
	shared.enabled = true
	shared.mu.Unlock()
	code := r.m.Run()
	stopShared()
	return code
}

// Main lets the test binary share one Redis Cluster among its tests (the
// "cluster" entry of [AllBackends]): it is started by the first test that
// asks for it and stopped when m's tests have run. Use it in TestMain:
//
//	func TestMain(m *testing.M) { goleak.VerifyTestMain(redistest.Main(m)) }
func Main(m TestingM) TestingM { return mainRunner{m} }

// shared is the cluster of this test binary. Its Envs are handed out one
// at a time: New flushes every master, so it waits until the test that has
// the cluster ends rather than flush under it (parallel tests queue).
var shared struct {
	mu      sync.Mutex
	enabled bool // Main is in use, so somebody stops the cluster
	started bool
	err     error // of the one start attempt
	servers []*Server
	admins  []*redis.Client // one per master, for FLUSHALL
	dirs    []string
	owner   string // name of the test holding the cluster, "" when free
	free    chan struct{}
}

func startShared() error {
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		return err
	}
	cfg := serverConfig{startTimeout: defaultStartTimeout, pickPort: freePort, cluster: true}
	for range sharedMasters {
		dir, err := os.MkdirTemp("", "relock-cluster-")
		if err != nil {
			return err
		}
		shared.dirs = append(shared.dirs, dir)
		s, err := startServer(bin, dir, &cfg)
		if err != nil {
			return err
		}
		shared.servers = append(shared.servers, s)
		shared.admins = append(shared.admins, redis.NewClient(&redis.Options{Addr: s.Addr}))
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterTimeout)
	defer cancel()
	return formCluster(ctx, shared.servers)
}

func stopShared() {
	shared.mu.Lock()
	defer shared.mu.Unlock()
	for _, a := range shared.admins {
		_ = a.Close()
	}
	for _, s := range shared.servers {
		s.Stop()
	}
	for _, d := range shared.dirs {
		_ = os.RemoveAll(d)
	}
	shared.admins, shared.servers, shared.dirs = nil, nil, nil
	if shared.started && shared.err == nil {
		shared.err = errors.New("the shared cluster was stopped")
	}
}

// acquireShared waits for the shared cluster to be free, starting it the
// first time, and hands it to t until t ends.
func acquireShared(t testing.TB) ([]*Server, bool) {
	t.Helper()
	if RequireRedisServer(t) == "" {
		return nil, false
	}
	shared.mu.Lock()
	if !shared.enabled {
		shared.mu.Unlock()
		t.Fatalf("redistest: the cluster backend needs TestMain to run the tests " +
			"through redistest.Main(m), which stops the shared cluster at the end")
		return nil, false
	}
	if !shared.started {
		shared.started = true
		shared.free = make(chan struct{}, 1)
		shared.free <- struct{}{}
		if shared.err = startShared(); shared.err != nil {
			shared.err = fmt.Errorf("start the shared cluster: %w", shared.err)
		}
	}
	if err := shared.err; err != nil {
		shared.mu.Unlock()
		t.Fatalf("redistest: %v", err)
		return nil, false
	}
	// The holder is this test or an ancestor: waiting would never end.
	if o := shared.owner; o != "" && (o == t.Name() || strings.HasPrefix(t.Name(), o+"/")) {
		shared.mu.Unlock()
		t.Fatalf("redistest: %s asks for a cluster Env while it (or its parent %s) holds one: "+
			"the cluster is shared, one Env per test at a time", t.Name(), o)
		return nil, false
	}
	free := shared.free
	shared.mu.Unlock()

	<-free
	shared.mu.Lock()
	shared.owner = t.Name()
	servers, admins := shared.servers, shared.admins
	shared.mu.Unlock()
	t.Cleanup(func() {
		shared.mu.Lock()
		shared.owner = ""
		shared.mu.Unlock()
		free <- struct{}{}
	})

	// A clean state: what earlier tests wrote is gone. Scripts stay cached,
	// as they would on a long-lived server.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, a := range admins {
		if err := a.FlushAll(ctx).Err(); err != nil {
			t.Fatalf("redistest: FLUSHALL on shared cluster master %s: %v", a.Options().Addr, err)
			return nil, false
		}
	}
	if err := waitClusterReady(ctx, admins); err != nil {
		t.Fatalf("redistest: shared cluster unhealthy (did a test kill a master?): %v", err)
		return nil, false
	}
	return servers, true
}
