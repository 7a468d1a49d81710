package rwlock

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/lease"
)

// The renew scripts of labeled holds: the label key follows each hold's keys.
var (
	readLabeledRenewer  = &lease.RenewScript{Lua: readRenewer.Lua, KeysPer: 3}
	writeLabeledRenewer = &lease.RenewScript{Lua: writeRenewer.Lua, KeysPer: 2}
)

// label records cfg's holder label for a first count of side s, renewed
// with its lease, and returns the hold's marker of it (nil: none).
func (rw *RWMutex) label(ctx context.Context, cfg *core.Config, sp *lease.Spec, s access, ownerID string, count int64, leaseTime time.Duration) any {
	if cfg.HolderLabel == "" || count != 1 {
		return nil
	}
	labeled := readLabeledRenewer
	if s == write {
		labeled = writeLabeledRenewer
	}
	core.AddLabel(ctx, rw.client.Client, sp, labeled, rw.name, ownerID, cfg.HolderLabel, leaseTime)
	return cfg.HolderLabel
}

// dropLabel deletes the label of h's owner once its labeled hold of side s
// ended, unless the owner still holds the other side here.
func (rw *RWMutex) dropLabel(ctx context.Context, h *core.Hold, s access, ended bool) {
	if r := h.Lease.Renewer(); !ended || r != readLabeledRenewer && r != writeLabeledRenewer {
		return
	}
	other := write
	if s == write {
		other = read
	}
	if rw.cfg.Watchdog.Find(rw.client.Client, rw.leaseID(other, h.Owner)) != nil {
		return
	}
	core.DropLabel(ctx, rw.client.Client, rw.name, h.Owner)
}

// heldBy adds to err who holds the lock, when its holders have labels.
func (rw *RWMutex) heldBy(ctx context.Context, err error) error {
	fields, herr := rw.client.Do(context.WithoutCancel(ctx), "hkeys", rw.name).StringSlice()
	if herr != nil {
		return err
	}
	var holders []string
	for _, f := range fields {
		if f == "mode" {
			continue
		}
		if id := strings.TrimSuffix(f, ":write"); !slices.Contains(holders, id) {
			holders = append(holders, id)
		}
	}
	return core.HeldBy(ctx, rw.client.Client, rw.name, holders, rw.cfg.UnlockTimeout, err)
}

// heldConfig is what of h's configuration a Downgrade carries to the read
// hold: its lease (fixed or renewed, and how long), scope and label.
func (rw *RWMutex) heldConfig(h *core.Hold) *core.Config {
	cfg := rw.cfg
	if h.Lease.Renewed() {
		cfg.LeaseTime, cfg.WatchdogTimeout = 0, h.Lease.Timeout()
	} else {
		cfg.LeaseTime = h.Lease.Timeout()
	}
	cfg.ScopedHold = h.Scoped
	cfg.HolderLabel, _ = h.Taken.(string)
	return &cfg
}
