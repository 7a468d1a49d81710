package semaphore

import "github.com/relock-go/relock/internal/options"

// Option configures a Semaphore when it is made (New). Only this package's
// options satisfy it, so an option of another package given here does not
// compile.
type Option interface{ newOption() options.Option }

// AcquireOption configures one acquisition (Acquire, TryAcquire) over
// New's options. The options that configure the Semaphore itself
// (providers, watchdog, unlock timeout, replica sync, recorded size) are
// not AcquireOptions, so giving one to a single acquisition does not
// compile.
type AcquireOption interface{ acquireOption() options.Option }

// CommonOption is an option given either to New or to one acquisition.
type CommonOption interface {
	Option
	AcquireOption
}

// newOnly is an option of New alone.
type newOnly options.Option

func (o newOnly) newOption() options.Option { return options.Option(o) }

// common is an option of New or of one acquisition.
type common options.Option

func (o common) newOption() options.Option     { return options.Option(o) }
func (o common) acquireOption() options.Option { return options.Option(o) }

func newOptions(opts []Option) []options.Option { return options.From(opts, Option.newOption) }

func acquireOptions(opts []AcquireOption) []options.Option {
	return options.From(opts, AcquireOption.acquireOption)
}

// WithHolderLabel: see lock.WithHolderLabel. A permit's holder is its permit id.
func WithHolderLabel(s string) CommonOption { return common(options.WithHolderLabel(s)) }
