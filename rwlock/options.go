package rwlock

import "github.com/relock-go/relock/internal/core"

// Option configures an RWMutex when it is made (New). Only this package's
// options satisfy it, so another package's option does not compile here.
type Option interface{ newOption() core.Option }

// LockOption configures one acquisition over New's options. Options of
// the RWMutex itself (providers, watchdog, unlock timeout, replica sync)
// are not LockOptions, so giving one to an acquisition does not compile.
type LockOption interface{ lockOption() core.Option }

// CommonOption is an option given either to New or to one acquisition.
type CommonOption interface {
	Option
	LockOption
}

// newOnly is an option of New alone.
type newOnly core.Option

func (o newOnly) newOption() core.Option { return core.Option(o) }

// common is an option of New or of one acquisition.
type common core.Option

func (o common) newOption() core.Option  { return core.Option(o) }
func (o common) lockOption() core.Option { return core.Option(o) }

func newOptions(opts []Option) []core.Option { return core.Options(opts, Option.newOption) }

func lockOptions(opts []LockOption) []core.Option {
	return core.Options(opts, LockOption.lockOption)
}

// WithHolderLabel: see lock.WithHolderLabel. The label is kept next to each hold, read or write.
func WithHolderLabel(s string) CommonOption { return common(core.WithHolderLabel(s)) }
