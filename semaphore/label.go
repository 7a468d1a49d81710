package semaphore

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
)

// labeledRenewer renews labeled permits: the same script, with the label
// key after each permit's keys.
var labeledRenewer = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 4}

// permitTaken is what an acquisition took: its permit, whether it
// recorded a holder label, and its weight.
type permitTaken struct {
	id      string
	labeled bool
	n       int64
}

// label records cfg's holder label (lock.WithHolderLabel) for the permit
// and makes its lease renew the label too.
func (s *Semaphore) label(ctx context.Context, cfg *core.Config, spec *lease.Spec, permitID string, leaseTime time.Duration) bool {
	if cfg.HolderLabel == "" {
		return false
	}
	core.AddLabel(ctx, s.client, spec, labeledRenewer, s.name, permitID, cfg.HolderLabel, leaseTime)
	return true
}

// heldBy adds to err who holds the permits, when the holders have labels.
func (s *Semaphore) heldBy(ctx context.Context, err error) error {
	permits, perr := s.client.Do(context.WithoutCancel(ctx), "zrange", s.permits, 0, core.MaxHeldBy-1).StringSlice()
	if perr != nil {
		return err
	}
	return core.HeldBy(ctx, s.client, s.name, permits, s.cfg.UnlockTimeout, err)
}
