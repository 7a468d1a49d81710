// Package hold is what a primitive returns from an acquire: a context that
// carries the acquiring context's values, the hold itself (its owner, for
// re-entry of the same lock) and its fencing token, and that ends when the
// hold ends (cause ErrLockLost when its lease was lost, context.Canceled
// after a release). The acquiring context bounded the wait only: its
// cancellation and deadline do not reach the hold, unless the hold is
// Scoped to it, as database/sql's BeginTx scopes a transaction (then it is
// released in the background when that context ends). Every
// primitive shares this state machine, so Unlock, RUnlock and Release
// answer alike: ErrNotHeld for a context without a live hold, nil for a
// hold already released because its context ended, ErrLockLost for a hold
// that was lost.
//
// The owner a hold names is a value, not a thread: Go has no thread id, so
// the owner that Redisson spells uuid:threadId is "<process uuid>:<sequence>"
// (Mint). An acquire on a context without a hold of its lock mints one,
// and the context it returns carries it, so nested calls that pass that
// context on re-enter instead of deadlocking.
//
// Around holds, the package also reads a release's reply (Released),
// ends every hold of a name by force (ForceUnlock, also run by relock
// unlock --force), and keeps the holder labels written beside holds
// (WriteLabel, DropLabel, Labels, and HeldBy, which names the holders in a
// contention error).
package hold
