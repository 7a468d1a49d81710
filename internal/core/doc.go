// Package core is what every primitive shares between its public call and
// its scripts: the client with the workers that bound its calls (Client),
// the options (Config), the acquisition loop (Acquire), the local queue of
// a process's waiters (Hub), and the hold an acquisition returns (Hold).
// A primitive reaches Redis through it alone, never through conn.
//
// Acquire runs try -> subscribe -> try again -> wait for the unlock message
// or the TTL the failed try returned -> retry, bounded by ctx and the wait
// bound. It never polls on an interval, and the uncontended path is one
// script call that never touches pub/sub. A primitive takes part through
// one contract: an Attempt (a try, the Keep that makes the hold, the
// Abandon that cleans up after a failed acquisition), a Request (its
// channel, how many holders it admits, the wait bound, a hand-off claim)
// and a Trace, the span wrapped around the loop. The first try is always
// made; once waiting, a transient error (Transient) is retried with a
// jittered backoff and returned wrapped when ctx ends. The Redlock waits in
// a loop of its own, since its members have no one channel and no local
// queue; what it shares lives here too: ErrWaitBound, Record and Member.
//
// A Hub per Redis client keeps each lock's first-come-first-served line of
// waiting goroutines, hears unlock messages on one pub/sub connection per
// node (SSUBSCRIBE per shard on a Cluster), and wakes only the head of a
// line (or the run of readers at its head), so a process neither stampedes
// Redis nor lets a late goroutine barge past those already waiting. A line
// and its subscription go with its last waiter. Who wakes a waiter:
//
//	event                             woken                    why
//	unlock message                    heads, kick; watchers    the lock may be free
//	grant message for the head        the head, granted        the hold is its already
//	local release (Hub.Release)       heads, kick              as an unlock message, sooner
//	resubscribed, slot moved, broken  heads, kick              a message may be lost
//	the head gives up (Leave)         new heads, kick          their turn
//	End(Handed / Refused / Passed)    the waiter               granted / kicked / owed a try
//
// A Hold is a context that carries the acquiring context's values, the
// owner (for re-entry) and the fencing token, and that ends when the hold
// ends (ErrLockLost when its lease was lost, context.Canceled after a
// release). The acquiring context bounds the wait only, unless the hold is
// Scoped to it. Every primitive shares this state machine, so Unlock,
// RUnlock and Release answer alike. An owner is "<process uuid>:<sequence>"
// (Mint), Redisson's uuid:threadId with a value in place of a thread.
// Around holds live the reading of a release's reply (Released), the forced
// end of every hold of a name (ForceUnlock) and the holder labels (Labels,
// HeldBy).
package core
