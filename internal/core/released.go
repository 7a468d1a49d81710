package core

import (
	"fmt"

	"github.com/relock-go/relock/internal/errs"
	"github.com/relock-go/relock/internal/lease"
)

// Released reads a release script's reply: -1, the hold was gone, is
// ErrLockLost with the watchdog's reason if it declared the lease lost,
// else gone; 2, the notification was refused (Redis 6 cannot be asked
// before the write), is ErrWaitersNotTold; anything else, released.
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
