// Package base is what the primitives (lock, rwlock, semaphore, redlock)
// share around their own scripts: their identity in errors (Ident: every
// call checks its arguments first, every error names the operation and
// the lock), the reading of a release's reply (Released) and of a PTTL
// (TTL), the withdrawal of a waiter's mark from a queue it gave up on
// (Withdraw), the one force-unlock script of every kind (ForceUnlock, also
// run by relock unlock --force), and the holder labels kept beside holds
// (WriteLabel, DropLabel, Labels, HeldBy).
package base
