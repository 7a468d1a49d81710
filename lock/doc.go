// Package lock is a distributed, reentrant mutex on Redis: sync.Mutex made
// distributed, with Redisson's RLock key layout so that a Java service
// using Redisson and a Go service using relock exclude each other on the
// same name.
//
// Ownership travels in the context. Lock returns a context that carries
// the owner: pass it on, and a nested Lock of the same name re-enters
// instead of deadlocking; Unlock takes it back. Two goroutines that start
// from their own contexts are two owners. The returned context is done
// when the hold ends, with cause ErrLockLost if the lease was lost (the
// holder must stop writing), and carries a fencing token (FencingToken)
// that a store can use to refuse writes from a holder that lost the lock.
//
// The lock is a Redis hash named after the lock, field <owner> = count,
// with a TTL: 30 s by default, renewed every 10 s by the process's
// watchdog while held, or a fixed WithLeaseTime. Waiters subscribe to the
// unlock channel redisson_lock__channel:{name} and wake on the message,
// with the TTL as the fallback; the goroutines of one process wait in line,
// first come first served. When the head of that line waits, Unlock hands
// the lock straight to it in the same script (a new owner and fencing
// token, no unlock message: the lock is never free for another to barge
// in), so a contended critical section costs one round trip; after 16
// such hand-offs in a row the lock is released through Redis so that
// waiters of other processes get their turn.
package lock
