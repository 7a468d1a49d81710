// Package acquire is the wait loop of the primitives on one Redis: try ->
// subscribe -> try again -> wait for the unlock message or the TTL the
// failed try returned (whichever first, bounded by ctx) -> retry. The loop
// never polls on an interval, and the uncontended path is one script call
// that never touches pub/sub. Goroutines of one process that wait for the
// same lock queue locally, first come first served (see package notify),
// and each acquire is one tracing span whose outcome, attempts and wait
// time the loop records.
//
// A primitive takes part through one contract: it hands Do an Attempt (a
// try, told whether it runs at the head of the local queue; a Keep that
// makes the hold of an acquisition that acquired, before its outcome is
// recorded, so that a grant refused then is recorded as its error; and an
// Abandon that cleans up after an acquisition that failed, which the loop
// calls), a Request (its channel, how many holders it admits, how it
// starts, the wait bound, a hand-off claim, which may decline as it joins
// the queue: a Decliner) and a Trace, the span Do
// wraps around the loop. What the primitives' Abandons share lives here
// too: the withdrawal of a waiter's mark from a queue it gave up on
// (Withdraw) and the give-back of what a try whose reply was lost may hold
// (GiveBack).
//
// The first try is always made, however short the wait bound
// (Request.Wait), unless the caller's ctx has already ended: the bound
// limits waiting, and a free lock or a re-entry never waits. An error of
// that first try (or of the subscription, when the acquire queued behind
// local waiters without trying) is returned at once: Redis could not be
// reached when the acquire began. Once waiting, a transient error (see
// conn.Transient: the network, a Redis loading, failing over or resharding)
// does not end the wait: the waiter tries again at its next wake-up or
// after a backoff (10 ms doubling to 1 s, jittered), the only time it
// polls, and when ctx ends it returns ctx's cause (ErrNotAcquired for the
// wait bound) wrapped with the last such error. Any other error ends the
// acquire at once.
//
// The Redlock waits in a loop of its own (package redlock), because its
// waiting has nothing of this one's: its members live on independent
// masters, so there is no one channel to subscribe to and no local queue
// to join (a member's unlock message says nothing of the quorum); it
// retries after a random delay, as the Redlock algorithm asks, so that
// contenders do not split the members again in step; and a round is
// itself parallel, decided on a quorum, and may leave a give-back that the
// next round must wait for. What the two loops share lives here: the
// wait bound (ErrWaitBound) and how an ending is recorded on the span and
// in the metrics (Record), and what a primitive offers the Redlock as one
// of its members (Member: a try for an owner the Redlock chooses, a
// release, the watchdog target that renews it).
package acquire
