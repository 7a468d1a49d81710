package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// fFailoverSeen is not a fault of the schedule but what the run saw of
// the topology: a new master, after a failover whatever caused it (the
// schedule's own failovers, or a master paused, killed or CLIENT PAUSEd
// long enough for the Sentinels or the cluster to give up on it).
const fFailoverSeen = "failover-seen"

// watchMasters polls, every 100 ms until ctx ends, which server is the
// master (the Sentinels' answer; each cluster node's ROLE), and returns an
// event each time that changes.
func (r *runner) watchMasters(ctx context.Context) []FaultEvent {
	var (
		mu  sync.Mutex
		out []FaultEvent
		wg  sync.WaitGroup
	)
	for _, name := range r.lay.Topos {
		if name == "redlock" {
			continue // independent masters: no failover
		}
		if name == "sentinel" {
			// The Sentinels' view, not the servers' roles: after a
			// SENTINEL FAILOVER the old master may stay a master for
			// seconds before it is reconfigured.
			wg.Go(func() {
				evs := r.watchSentinels(ctx)
				mu.Lock()
				out = append(out, evs...)
				mu.Unlock()
			})
			continue
		}
		for _, s := range r.topos[name].data {
			wg.Go(func() {
				for _, ev := range watchRole(ctx, name, s) {
					mu.Lock()
					out = append(out, ev)
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	return out
}

// numberSeen orders the failovers seen and numbers them after the
// schedule's faults.
func numberSeen(evs []FaultEvent, after int) []FaultEvent {
	slices.SortFunc(evs, func(a, b FaultEvent) int { return cmp64(a.At, b.At) })
	for i := range evs {
		evs[i].ID = after + i + 1
	}
	return evs
}

// watchSentinels reports each change of the master the Sentinels name.
func (r *runner) watchSentinels(ctx context.Context) []FaultEvent {
	var out []FaultEvent
	last := ""
	for sleep(ctx, 100*time.Millisecond) {
		addr, err := r.sentinelMasterAddr()
		if err != nil || addr == last {
			continue
		}
		if last != "" {
			id := addr
			for _, s := range r.topos["sentinel"].data {
				if s.addr == addr {
					id = s.id
				}
			}
			t := time.Now().UnixNano()
			out = append(out, FaultEvent{Fault: Fault{Kind: fFailoverSeen, Topo: "sentinel", Target: id},
				At: t, Until: t, Note: "the Sentinels name " + id + " the master"})
		}
		last = addr
	}
	return out
}

// watchRole reports the moments s turned from a replica into a master.
func watchRole(ctx context.Context, topo string, s *server) []FaultEvent {
	c := redis.NewClient(&redis.Options{Addr: s.addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond,
		ReadTimeout: 200 * time.Millisecond, PoolSize: 1})
	defer c.Close()
	var out []FaultEvent
	last := ""
	for sleep(ctx, 100*time.Millisecond) {
		role, err := c.Do(ctx, "ROLE").Slice()
		if err != nil || len(role) == 0 {
			continue // paused, killed or busy: its role is unknown, not changed
		}
		now := fmt.Sprint(role[0])
		if last == "slave" && now == "master" {
			t := time.Now().UnixNano()
			out = append(out, FaultEvent{Fault: Fault{Kind: fFailoverSeen, Topo: topo, Target: s.id},
				At: t, Until: t, Note: fmt.Sprintf("%s became a master", s.id)})
		}
		last = now
	}
	return out
}
