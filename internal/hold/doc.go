// Package hold is what a primitive returns from an acquire: a context that
// carries the owner, the fencing token and the hold itself, and that ends
// when the hold ends (cause ErrLockLost when its lease was lost,
// context.Canceled after a release). It also scopes the hold to the
// acquiring context, as database/sql's BeginTx scopes a transaction: when
// that context ends, the hold is released in the background. Every
// primitive shares this state machine, so Unlock, RUnlock and Release
// answer alike: ErrNotHeld for a context without a live hold, nil for a
// hold already released because its context ended, ErrLockLost for a hold
// that was lost.
package hold
