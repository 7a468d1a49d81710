package lock

import (
	"context"
	"slices"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
)

// heldBy adds to err who holds the lock, when its holders have labels:
// "not acquired (held by pod-7 for 4.2s)".
func (m *Mutex) heldBy(ctx context.Context, err error) error {
	holders, herr := m.client.Do(context.WithoutCancel(ctx), "hkeys", m.name).StringSlice()
	if herr != nil || len(holders) == 0 {
		return err
	}
	return core.HeldBy(ctx, m.client.Client, m.name, holders, m.cfg.UnlockTimeout, err)
}

// addKeys adds to a first count's spec the keys renewed with its hold:
// its label (WithHolderLabel), then a key kept with it (core.KeepWith).
func (m *Mutex) addKeys(ctx context.Context, a *attempt, spec *lease.Spec) {
	labeled := a.cfg.HolderLabel != ""
	if labeled {
		core.AddLabel(ctx, m.client.Client, spec, labeledRenewer, m.name, a.owner, a.cfg.HolderLabel, a.lease)
	}
	key, ok := core.Kept(ctx, m.name)
	if !ok {
		return
	}
	t := &spec.Targets[0]
	t.Keys = append(slices.Clone(t.Keys), key)
	spec.Renewer = keptRenewer
	if labeled {
		spec.Renewer = labeledKeptRenewer
	}
}

// holdExtras is what a hold's first count set up beside it: its
// force-unlock notice (WithForceUnlockNotice).
type holdExtras struct {
	stop func() // ends the notice; nil when it could not start
}

// unwatch ends the hold's notice, if any (x may be nil).
func (x *holdExtras) unwatch() {
	if x != nil && x.stop != nil {
		x.stop()
	}
}

// watch listens for the lock's unlock message while the hold lasts: one
// that comes while the owner's field is gone is a ForceUnlock made
// elsewhere, and the hold is lost at once. The check runs on a goroutine
// of its own, bounded by the unlock timeout; a lost lease ends the notice.
func (m *Mutex) watch(ctx context.Context, x *holdExtras, ls *lease.Lease, ownerID string) {
	check := func(string) {
		go func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.cfg.UnlockTimeout)
			defer cancel()
			held, err := m.client.Do(cctx, "hexists", m.name, ownerID).Bool()
			if err == nil && !held {
				ls.Lose("force-unlocked: the lock's unlock message came while it was held, and the owner's field was gone")
			}
		}()
	}
	stop, err := m.hub.Watch(context.WithoutCancel(ctx), m.channel, check) // the acquiring ctx may end now
	if err != nil {
		return // the renewal still finds a force unlock, later
	}
	x.stop = stop
	ls.OnLost(lease.LostFunc(func(error) { stop() }))
}
