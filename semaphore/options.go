package semaphore

import "github.com/relock-go/relock/internal/core"

// Option configures a Semaphore when it is made (New). Only this package's
// options satisfy it, so another package's option does not compile here.
type Option interface{ newOption() core.Option }

// AcquireOption configures one acquisition over New's options. Options of
// the Semaphore itself (providers, watchdog, unlock timeout, replica sync,
// recorded size) are not AcquireOptions, so giving one does not compile.
type AcquireOption interface{ acquireOption() core.Option }

// CommonOption is an option given either to New or to one acquisition.
type CommonOption interface {
	Option
	AcquireOption
}

// newOnly is an option of New alone.
type newOnly core.Option

func (o newOnly) newOption() core.Option { return core.Option(o) }

// common is an option of New or of one acquisition.
type common core.Option

func (o common) newOption() core.Option     { return core.Option(o) }
func (o common) acquireOption() core.Option { return core.Option(o) }

func newOptions(opts []Option) []core.Option { return core.Options(opts, Option.newOption) }

func acquireOptions(opts []AcquireOption) []core.Option {
	return core.Options(opts, AcquireOption.acquireOption)
}

// WithHolderLabel: see lock.WithHolderLabel. A permit's holder is its permit id.
func WithHolderLabel(s string) CommonOption { return common(core.WithHolderLabel(s)) }
