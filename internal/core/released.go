package core

import (
	"fmt"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
)

// Released reads the reply of a release script: -1 means the hold was no
// longer in Redis, so the release reports ErrLockLost, with the reason the
// watchdog found if it declared the lease lost, else gone ("the lock was no
// longer held in Redis"); 2, a release whose notification was refused
// (Redis 6, which cannot be asked before the write), reports
// ErrWaitersNotTold. Any other reply is a release.
func Released(res int64, err error, l *lease.Lease, gone string) error {
	switch {
	case err != nil:
		return err
	case res == 2:
		return errs.ErrWaitersNotTold
	case res != -1:
		return nil
	}
	if lerr := l.Lost(); lerr != nil {
		return errs.Reason(lerr)
	}
	return fmt.Errorf("%w: %s", errs.ErrLockLost, gone)
}
