package lease

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/relock-go/relock/internal/conn"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
)

// slotAudit is a pipeline hook on a cluster client: it records, for the
// renewal scripts of each pipeline, how many went to one slot, and every
// script whose keys span two slots (Redis would refuse it: CROSSSLOT).
type slotAudit struct {
	mu         sync.Mutex
	scripts    int
	maxPerSlot int
	crossSlot  []string
	errs       []error
}

func (a *slotAudit) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (a *slotAudit) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (a *slotAudit) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		perSlot := map[int]int{}
		a.mu.Lock()
		for _, cmd := range cmds {
			args := cmd.Args()
			if cmd.Name() != "evalsha" || len(args) < 3 {
				continue
			}
			a.scripts++
			n, _ := args[2].(int)
			slot := -1
			for _, k := range args[3 : 3+n] {
				s := conn.Slot(fmt.Sprint(k))
				if slot >= 0 && s != slot {
					a.crossSlot = append(a.crossSlot, fmt.Sprint(args[3:3+n]))
				}
				slot = s
			}
			perSlot[slot]++
			a.maxPerSlot = max(a.maxPerSlot, perSlot[slot])
		}
		a.mu.Unlock()
		err := next(ctx, cmds)
		a.mu.Lock()
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				a.errs = append(a.errs, cmd.Err())
			}
		}
		a.mu.Unlock()
		return err
	}
}

// clusterLeaseNames spreads n leases over the cluster: half on names of
// their own (slots all over the masters), half under four hash tags, so
// that a tag's slot holds more leases than one script renews.
func clusterLeaseNames(n int) []string {
	names := make([]string, n)
	for i := range names {
		if i%2 == 0 {
			names[i] = fmt.Sprintf("lease:%d", i)
		} else {
			names[i] = fmt.Sprintf("{tag%d}:lease:%d", i%4, i)
		}
	}
	return names
}

// TestClusterBatchesGroupBySlot: many leases over the three masters of the
// shared cluster, renewed in batches of 8 per script: every script stays
// in one slot (no CROSSSLOT), a slot with many leases gets several scripts
// in one round, and every lease is renewed and kept through several
// leases' time.
func TestClusterBatchesGroupBySlot(t *testing.T) {
	env := redistest.ClusterBackend().New(t)
	cc := env.Universal.(*redis.ClusterClient)
	audit := &slotAudit{}
	cc.AddHook(audit)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, cc.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())

	const n, timeout = 240, 900 * time.Millisecond // renewed every 300 ms
	w := New(WithBatchSize(8))
	names := clusterLeaseNames(n)
	var rec lostRecorder
	// Every key first, then every lease from one instant: all come due
	// in the same round, however slowly a loaded machine wrote the keys
	// (one by one, they would spread over rounds, and a slot's eight
	// might never meet in one).
	for _, name := range names {
		require.NoError(t, cc.Set(ctx, name, "me", 10*timeout).Err())
	}
	sent := w.Now()
	leases := make([]*Lease, n)
	for i, name := range names {
		leases[i] = w.Start(Spec{Renewer: stringRenewer, Targets: []Target{{Client: conn.Of(cc), Keys: []string{name}, Arg: "me"}},
			Timeout: timeout, Renew: true, ID: ID{Lock: name}, Name: name, Primitive: "test"}, sent)
		leases[i].OnLost(&rec)
	}
	masters := map[string]bool{}
	for _, name := range names {
		m, err := cc.MasterForKey(ctx, name)
		require.NoError(t, err)
		masters[m.Options().Addr] = true
	}
	require.Len(t, masters, 3, "the leases are spread over every master")

	time.Sleep(4 * timeout) // several renewals of each lease
	for _, name := range names {
		pttl, err := cc.PTTL(ctx, name).Result()
		require.NoError(t, err)
		require.Positive(t, pttl, "lease %q lapsed", name)
		// Written with 10 leases' TTL: a lease's own renewals bring it
		// down to one lease.
		require.LessOrEqual(t, time.Duration(pttl), timeout, "lease %q never renewed", name)
	}
	st := w.Stats()
	require.Zero(t, rec.n(), "leases lost")
	require.Zero(t, st.Lost)
	require.Zero(t, st.Errors, "renewal errors (CROSSSLOT?)")
	require.GreaterOrEqual(t, st.Renewed, int64(2*n), "each lease renewed more than once: %+v", st)
	audit.mu.Lock()
	require.Empty(t, audit.crossSlot, "scripts spanning slots")
	require.Empty(t, audit.errs)
	require.Greater(t, audit.maxPerSlot, 1, "a crowded slot is renewed by several scripts of 8")
	require.Greater(t, audit.scripts, n/8)
	audit.mu.Unlock()
	for _, l := range leases {
		l.Stop()
	}
}

// TestClusterMasterDownSparesOtherMasters: with a master of the cluster
// killed, the leases on the other masters keep being renewed (one pipeline
// goes to every master, but a node's failure fails only its own scripts)
// and those on the dead master are reported lost. The cluster is the
// test's own: one master gone would break the shared one, and the others
// keep serving their slots only without full coverage required.
func TestClusterMasterDownSparesOtherMasters(t *testing.T) {
	cc, servers := redistest.StartCluster(t, 3, redistest.WithArgs("--cluster-require-full-coverage", "no"))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	require.NoError(t, cc.ScriptLoad(ctx, stringRenewer.Lua.Source()).Err())

	const n, timeout = 60, 1500 * time.Millisecond
	w := New(WithBatchSize(8))
	names := clusterLeaseNames(n)
	type entry struct {
		l    *Lease
		rec  *lostRecorder
		addr string
	}
	var entries []entry
	for _, name := range names {
		m, err := cc.MasterForKey(ctx, name)
		require.NoError(t, err)
		e := entry{l: hold(t, ctx, w, cc, name, timeout, true), rec: &lostRecorder{}, addr: m.Options().Addr}
		e.l.OnLost(e.rec)
		entries = append(entries, e)
	}
	victim := servers[0]
	onVictim := 0
	for _, e := range entries {
		if e.addr == victim.Addr {
			onVictim++
		}
	}
	require.Positive(t, onVictim)
	require.Less(t, onVictim, n)

	victim.Kill()
	killed := time.Now()
	// Lost no later than a lease after the kill; generous for a slow VM.
	for _, e := range entries {
		if e.addr != victim.Addr {
			continue
		}
		require.Eventually(t, func() bool { return e.rec.n() == 1 }, 10*time.Second, 10*time.Millisecond,
			"a lease on the dead master not reported lost")
	}
	t.Logf("leases on the dead master reported lost %v after the kill", time.Since(killed))
	time.Sleep(3 * timeout) // the survivors go through several renewals
	renewed := w.Stats().Renewed
	time.Sleep(timeout)
	require.Greater(t, w.Stats().Renewed, renewed, "renewals go on: %+v", w.Stats())
	for _, e := range entries {
		if e.addr == victim.Addr {
			continue
		}
		require.Zero(t, e.rec.n(), "lease on live master %s lost: %v", e.addr, e.rec.errs)
		require.NoError(t, e.l.Lost())
	}
	for _, e := range entries {
		e.l.Stop()
	}
}
