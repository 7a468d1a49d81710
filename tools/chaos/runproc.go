package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// startWorkers starts the client processes, each with a proxy of its own
// to every data server of its topology.
func (r *runner) startWorkers() error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("workers: %w", err)
	}
	for _, name := range r.lay.Topos {
		t := r.topos[name]
		for i := range r.lay.Workers {
			id := workerID(name, i)
			var route, data, sents []string
			for _, s := range t.data {
				p, err := r.px.add(id, s.id, s.addr)
				if err != nil {
					return err
				}
				route = append(route, s.addr+"="+p)
				data = append(data, s.addr)
			}
			for _, s := range t.sentinels {
				sents = append(sents, s.addr)
			}
			if err := r.startWorker(exe, name, id, i, route, data, sents); err != nil {
				return err
			}
		}
	}
	return nil
}

func (r *runner) startWorker(exe, topo, id string, i int, route, data, sents []string) error {
	hist := filepath.Join(r.out, "history")
	p := &proc{name: id, bin: exe, dir: r.out, log: filepath.Join(r.out, "servers", strings.ReplaceAll(id, "/", "-")+".log")}
	p.argv = func(inc int) []string {
		return []string{"worker", "-topo", topo, "-id", id, "-inc", strconv.Itoa(inc),
			"-hist", filepath.Join(hist, fmt.Sprintf("%s-%d.jsonl", strings.ReplaceAll(id, "/", "-"), inc)),
			"-lease", r.lease.String(), "-seed", strconv.FormatUint(r.seed*1000+uint64(i), 10),
			"-route", strings.Join(route, ","), "-data", strings.Join(data, ","),
			"-sentinels", strings.Join(sents, ","),
			// Worker 0 runs with replica sync off: a failover may then
			// lose its holds, a stated limit; the others keep the default.
			"-replica-sync=" + strconv.FormatBool(i != 0)}
	}
	p.onExit = func(p *proc, inc int, at time.Time) {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.incEnds = append(r.incEnds, IncEnd{Proc: fmt.Sprintf("%s#%d", p.name, inc), At: at.UnixNano()})
	}
	r.track(p)
	r.workers[id] = p
	if _, err := p.start(); err != nil {
		return fmt.Errorf("worker %s: %w", id, err)
	}
	return nil
}

// stopWorkers asks every worker to release and exit, all at once.
func (r *runner) stopWorkers() {
	var wg sync.WaitGroup
	for _, w := range r.workers {
		wg.Go(func() { w.terminate(10 * time.Second) })
	}
	wg.Wait()
}

// fixRestarts makes a restarted data server of the Sentinel group come
// back in the role the Sentinels give it now: a replica of the current
// master, or (when it is still the master they know) a master. Started with
// its first arguments it could come back a replica of its own replica.
func (r *runner) fixRestarts() {
	t, ok := r.topos["sentinel"]
	if !ok {
		return
	}
	for _, s := range t.data {
		base := slices.Clone(s.args)
		if i := slices.Index(base, "--replicaof"); i >= 0 {
			base = slices.Delete(base, i, i+3)
		}
		s.argv = func(int) []string {
			m, err := r.sentinelMasterAddr()
			if err != nil || m == s.addr {
				return base
			}
			host, port, _ := strings.Cut(m, ":")
			return append(slices.Clone(base), "--replicaof", host, port)
		}
	}
}

// sentinelMasterAddr asks the Sentinels which server is the master.
func (r *runner) sentinelMasterAddr() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var last error
	for _, s := range r.topos["sentinel"].sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 500 * time.Millisecond})
		a, err := sc.GetMasterAddrByName(ctx, sentinelMaster).Result()
		_ = sc.Close()
		if err == nil && len(a) == 2 {
			return a[0] + ":" + a[1], nil
		}
		last = err
	}
	return "", fmt.Errorf("no Sentinel knows the master: %w", last)
}

// KeyLeft is a key found at the end of a run with no TTL.
type KeyLeft struct {
	Topo, Server, Key string
}

// keyspace scans every master of every topology for keys without a TTL.
func (r *runner) keyspace(ctx context.Context) []KeyLeft {
	var out []KeyLeft
	for _, name := range r.lay.Topos {
		for _, s := range r.topos[name].data {
			out = append(out, scanNoTTL(ctx, name, s)...)
		}
	}
	return out
}

// scanNoTTL returns the keys of a master that have no TTL (a replica is
// skipped: it mirrors its master).
func scanNoTTL(ctx context.Context, topo string, s *server) []KeyLeft {
	c := admin(s.addr)
	defer c.Close()
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		return nil
	}
	var out []KeyLeft
	it := c.Scan(ctx, 0, "*", 100).Iterator()
	for it.Next(ctx) {
		if ttl, err := c.PTTL(ctx, it.Val()).Result(); err == nil && ttl == -1 {
			out = append(out, KeyLeft{Topo: topo, Server: s.id, Key: it.Val()})
		}
	}
	return out
}
