package redistest

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// MoveSlot moves slot, with its keys, from the master that serves it to
// the master to, as `redis-cli --cluster reshard` does: IMPORTING and
// MIGRATING, MIGRATE of every key, then SETSLOT NODE on every master. It
// returns once every master names to as the slot's owner. The old owner
// then drops the slot's shard channels (a sunsubscribe to their
// subscribers) and answers MOVED for its keys.
func MoveSlot(ctx context.Context, servers []*Server, slot int, to *Server) error {
	admins := make(map[*Server]*redis.Client, len(servers))
	ids := make(map[*Server]string, len(servers))
	for _, s := range servers {
		a := redis.NewClient(&redis.Options{Addr: s.Addr, PoolSize: 1, MaxRetries: -1})
		defer a.Close()
		admins[s] = a
		id, err := a.Do(ctx, "CLUSTER", "MYID").Text()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER MYID: %w", s.Addr, err)
		}
		ids[s] = id
	}
	from, err := slotOwner(ctx, admins[to], slot, servers)
	if err != nil {
		return err
	}
	if from == to {
		return nil
	}
	steps := []struct {
		s    *Server
		args []any
	}{
		{to, []any{"CLUSTER", "SETSLOT", slot, "IMPORTING", ids[from]}},
		{from, []any{"CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to]}},
	}
	for _, st := range steps {
		if err := admins[st.s].Do(ctx, st.args...).Err(); err != nil {
			return fmt.Errorf("%s: %v: %w", st.s.Addr, st.args, err)
		}
	}
	for {
		keys, err := admins[from].ClusterGetKeysInSlot(ctx, slot, 100).Result()
		if err != nil {
			return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT: %w", from.Addr, err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", "127.0.0.1", to.Port, "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := admins[from].Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("%s: MIGRATE: %w", from.Addr, err)
		}
	}
	// The new owner first, so that it bumps its epoch and wins.
	order := append([]*Server{to, from}, servers...)
	done := map[*Server]bool{}
	for _, s := range order {
		if done[s] {
			continue
		}
		done[s] = true
		if err := admins[s].Do(ctx, "CLUSTER", "SETSLOT", slot, "NODE", ids[to]).Err(); err != nil {
			return fmt.Errorf("%s: CLUSTER SETSLOT NODE: %w", s.Addr, err)
		}
	}
	for {
		agreed := true
		for _, s := range servers {
			owner, err := slotOwner(ctx, admins[s], slot, servers)
			if err != nil || owner != to {
				agreed = false
			}
		}
		if agreed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slot %d: masters do not agree on %s: %w", slot, to.Addr, ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// slotOwner is the server that a's CLUSTER SHARDS names as slot's master.
func slotOwner(ctx context.Context, a *redis.Client, slot int, servers []*Server) (*Server, error) {
	shards, err := a.ClusterShards(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("%s: CLUSTER SHARDS: %w", a.Options().Addr, err)
	}
	for _, sh := range shards {
		if !hasSlot(sh.Slots, slot) {
			continue
		}
		for _, n := range sh.Nodes {
			if n.Role != "master" {
				continue
			}
			addr := net.JoinHostPort(n.IP, strconv.FormatInt(n.Port, 10))
			for _, s := range servers {
				if addr == s.Addr || addr == "127.0.0.1:"+strconv.Itoa(s.Port) {
					return s, nil
				}
			}
			return nil, fmt.Errorf("slot %d: owner %s is not one of the servers", slot, addr)
		}
	}
	return nil, fmt.Errorf("slot %d: no owner", slot)
}

// hasSlot reports whether slot is in one of ranges.
func hasSlot(ranges []redis.SlotRange, slot int) bool {
	for _, r := range ranges {
		if slot >= int(r.Start) && slot <= int(r.End) {
			return true
		}
	}
	return false
}
