package lock

import "context"

// A reply lost after the acquire script ran (a read timeout, a broken
// connection) must not leave a grant in Redis that nobody was told of.
// acquire.lua can run twice for one acquisition in each mode below, and
// giveBack undoes what an acquisition that gave up may have left.

// Modes of acquire.lua: how a second run of one acquisition is told from
// another acquisition (boxed once).
var (
	modeMinted any = "minted" // the owner was made for this acquisition
	modeLatch  any = "latch"  // through the acquire latch
	modeNone   any = ""       // not: the caller counts runs (a Redlock member)
)

// giveBack undoes, in the background, the grant an acquire that gave up
// may have left in Redis: its last try failed after the script may have
// run (a reply lost to a timeout or a broken connection). Without it the
// lock would stay taken by nobody until its lease ran out. The grant of a
// minted owner is its last count (unlock_last.lua frees it and wakes the
// waiters, or finds nothing); one with a latch is given back through it
// (give_back.lua undoes exactly the count that run added).
// Bounded by the unlock timeout; nothing of the caller waits for it.
func (m *Mutex) giveBack(ctx context.Context, a *attempt) {
	ctx = context.WithoutCancel(ctx)
	timeout := m.cfg.UnlockTimeout
	go func() {
		if a.latch != "" {
			n, err := giveBackScript.CallRetrying(ctx, m.client, timeout, 3, m.name, a.latch, m.channel, a.owner, unlockMessage, m.publishArg).Int64()
			if err == nil && n == 1 {
				m.hub.Release(m.channel)
			}
			return
		}
		_, _ = m.releaseLast(ctx, a.owner, a.lease, timeout, false, nil)
	}()
}
