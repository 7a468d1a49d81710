//go:build faults

package faults

import (
	"context"
	"testing"
	"time"

	"github.com/relock-go/relock/election"
)

// TestFaultPartitionedLeader cuts the leader off from Redis: its leading
// context ends (ErrLockLost) before another candidate, waiting in line
// straight to Redis all along, is elected; an observer beside that
// candidate reports the old leader, the vacancy and the new one, in that
// order.
func TestFaultPartitionedLeader(t *testing.T) {
	checkLeaks(t)
	e := newEnv(t, 1, true)
	name := lockName(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leader := election.New(e.proxied[0], name, election.WithWatchdogTimeout(faultLease))
	next := election.New(e.direct[0], name, election.WithWatchdogTimeout(faultLease))
	changes := next.Observe(ctx)
	if l := <-changes; !l.Vacant() {
		t.Fatalf("first observed %+v, want vacant", l)
	}

	leading, err := leader.Campaign(ctx, "proxied")
	if err != nil {
		t.Fatalf("leader: %v", err)
	}
	from := time.Now()
	end := watchEnd(leading)
	type won struct {
		leading context.Context
		at      time.Time
		err     error
	}
	elected := make(chan won, 1)
	go func() {
		l, err := next.Campaign(ctx, "direct")
		elected <- won{l, time.Now(), err}
	}()
	time.Sleep(faultLease / 2)
	cut := time.Now()
	e.partition()
	w := <-elected
	if w.err != nil {
		t.Fatalf("next candidate: %v", w.err)
	}
	told := end.told(t, "leader", 2*time.Second)
	t.Logf("leader told %v after the partition; next elected %v after it",
		told.Sub(cut).Round(time.Millisecond), w.at.Sub(cut).Round(time.Millisecond))
	checkNoOverlap(t, interval{"leader", from, told}, interval{"next", w.at, time.Now()})
	if !isLost(context.Cause(leading)) {
		t.Errorf("leading context's cause %v, want ErrLockLost", context.Cause(leading))
	}
	var seen []election.Leader
	for len(seen) < 3 {
		select {
		case l := <-changes:
			seen = append(seen, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("observed %+v, want the leader, a vacancy and the next", seen)
		}
	}
	if seen[0].Value != "proxied" || !seen[1].Vacant() || seen[2].Value != "direct" {
		t.Errorf("observed %+v, want proxied, vacant, direct", seen)
	}
	e.heal(t)
	if err := next.Resign(w.leading); err != nil {
		t.Errorf("next's Resign: %v", err)
	}
	cancel()
}
