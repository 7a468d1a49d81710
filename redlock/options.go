package redlock

import "github.com/relock-go/relock/internal/core"

// Option configures a Lock when it is made (New, NewMulti). Only this
// package's options satisfy it: package lock's do not compile here.
type Option interface{ newOption() core.Option }

// LockOption configures one acquisition (Lock, TryLock) over New's
// options. Options of the Lock itself (providers, watchdog, unlock
// timeout, node timeout, drift) are not LockOptions and do not compile here.
type LockOption interface{ lockOption() core.Option }

// CommonOption is an option given either to New or NewMulti, or to one acquisition.
type CommonOption interface {
	Option
	LockOption
}

// newOnly is an option of New and NewMulti alone.
type newOnly core.Option

func (o newOnly) newOption() core.Option { return core.Option(o) }

// common is an option of New and NewMulti, or of one acquisition.
type common core.Option

func (o common) newOption() core.Option  { return core.Option(o) }
func (o common) lockOption() core.Option { return core.Option(o) }
