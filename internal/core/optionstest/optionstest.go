// Package optionstest builds the option sets the primitives' fuzz tests
// try: a mask says which options are given, and Fuzz says whether the set
// is valid and which lease a hold gets, by package core's rules.
package optionstest

import (
	"errors"
	"time"

	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/errs"
)

// Bits of the fuzzers' option mask: which option is given.
const (
	Lease = 1 << iota
	Watchdog
	Wait
	Unlock
)

// Fuzz builds the options mask asks for (durations in nanoseconds), and
// says whether they are valid and which lease a hold gets.
func Fuzz(mask uint8, lease, wdt, wait, unlock int64) (opts []core.Option, valid bool, effective time.Duration) {
	valid, effective = true, core.DefaultWatchdogTimeout
	if mask&Watchdog != 0 {
		opts = append(opts, core.WithWatchdogTimeout(time.Duration(wdt)))
		valid = valid && time.Duration(wdt) >= core.MinLease && time.Duration(wdt) <= core.MaxLease
		effective = time.Duration(wdt)
	}
	if mask&Lease != 0 {
		opts = append(opts, core.WithLeaseTime(time.Duration(lease)))
		valid = valid && time.Duration(lease) >= core.MinLease && time.Duration(lease) <= core.MaxLease
		effective = time.Duration(lease)
	}
	if mask&Wait != 0 {
		opts = append(opts, core.WithWaitTimeout(time.Duration(wait)))
		valid = valid && wait > 0
	}
	if mask&Unlock != 0 {
		opts = append(opts, core.WithUnlockTimeout(time.Duration(unlock)))
		valid = valid && time.Duration(unlock) >= core.MinUnlockTimeout && time.Duration(unlock) <= core.MaxUnlockTimeout
	}
	return opts, valid, effective
}

// MayBeLost reports whether a hold of lease, acquired at since, may be
// reported lost by now: the watchdog declares it lost a tick (10 ms) and
// 1% early, and a short lease can lapse while a fuzz body runs.
func MayBeLost(err error, since time.Time, lease time.Duration) bool {
	return errors.Is(err, errs.ErrLockLost) && time.Since(since) >= lease-lease/100-10*time.Millisecond
}
