package semaphore

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
)

// labeledRenewer renews labeled permits: the label key follows each permit's keys.
var labeledRenewer = &lease.RenewScript{Lua: renewer.Lua, KeysPer: 4}

// permitTaken is what an acquisition took: permit, label recorded, weight.
type permitTaken struct {
	id      string
	labeled bool
	n       int64
}

// label records cfg's holder label for the permit, renewed with its lease.
func (s *Semaphore) label(ctx context.Context, cfg *core.Config, spec *lease.Spec, permitID string, leaseTime time.Duration) bool {
	if cfg.HolderLabel == "" {
		return false
	}
	core.AddLabel(ctx, s.client.Client, spec, labeledRenewer, s.name, permitID, cfg.HolderLabel, leaseTime)
	return true
}

// heldBy adds to err who holds the permits, when the holders have labels.
func (s *Semaphore) heldBy(ctx context.Context, err error) error {
	permits, perr := s.client.Do(context.WithoutCancel(ctx), "zrange", s.permits, 0, core.MaxHeldBy-1).StringSlice()
	if perr != nil {
		return err
	}
	return core.HeldBy(ctx, s.client.Client, s.name, permits, s.cfg.UnlockTimeout, err)
}
