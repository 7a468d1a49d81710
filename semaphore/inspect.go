package semaphore

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// TTL returns how long the permits of the hold in ctx last unless renewed,
// by the server's clock: 0 when ctx carries no live hold of this
// semaphore or its permits have expired.
func (s *Semaphore) TTL(ctx context.Context) (time.Duration, error) {
	if err := s.ident().Check("ttl", ctx, unmade); err != nil {
		return 0, err
	}
	h, ok := core.From(ctx, s.key())
	if !ok || ctx.Err() != nil {
		return 0, nil
	}
	permitID := h.Taken.(permitTaken).id
	var expiry float64
	var now time.Time
	err := s.client.Within(ctx, s.cfg.UnlockTimeout, func(ctx context.Context) (err error) {
		r := s.client.Pipelined(ctx, []any{"zscore", s.permits, permitID}, []any{"time"})
		if expiry, err = r[0].Float64(); err != nil {
			return err
		}
		now, err = r[1].Time()
		return err
	})
	if core.Absent(err) {
		return 0, nil
	}
	if err != nil {
		return 0, s.id.Wrap("ttl", err)
	}
	left := time.Duration(expiry)*time.Millisecond - time.Duration(now.UnixMilli())*time.Millisecond
	return max(left, 0), nil
}

// ForceRelease frees every permit, whoever holds them, and wakes the
// waiters; the size record stays. It reports whether any permit was held.
// A holder on this client and watchdog learns of it at once, one elsewhere
// at its next renewal; either way its context ends with ErrLockLost.
func (s *Semaphore) ForceRelease(ctx context.Context) (bool, error) {
	if err := s.ident().Check("forcerelease", ctx, unmade); err != nil {
		return false, err
	}
	ok, err := core.ForceUnlockAndTell(ctx, s.client, s.cfg.UnlockTimeout, s.cfg.Watchdog, s.hub, core.KindSemaphore, s.name, s.channel, "force-released")
	return ok, s.id.Wrap("forcerelease", err)
}

// Extend makes the fixed lease (WithLeaseTime) of the hold in held end d
// after now, as a watchdog renewal would; it never shortens a lease. It
// returns ErrInvalidArgument for d under 30 ms, over 24 h or under what is
// left, or for a hold the watchdog renews; ErrNotHeld when held carries no
// live hold of this semaphore; an error matching ErrLockLost when the
// hold was lost (held ends then).
func (s *Semaphore) Extend(held context.Context, d time.Duration) error {
	if err := s.ident().Check("extend", held, unmade); err != nil {
		return err
	}
	return s.id.Wrap("extend", core.Extend(held, s.client, d, s.cfg.UnlockTimeout, s.key()))
}
