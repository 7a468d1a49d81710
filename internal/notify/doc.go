// Package notify delivers unlock messages to the goroutines waiting for a
// lock. Each Redis client has one Hub, and each Hub one pub/sub connection
// (one per shard node on a Redis Cluster, with SSUBSCRIBE), shared by every
// waiter of every lock on that client. Channels are reference-counted:
// subscribed when the first waiter of a lock arrives, unsubscribed when the
// last one leaves; the connection closes shortly after its last channel. A
// fair lock's waiter waits on a seat (Hub.TakeSeat), a channel of its own
// that serves the process's next waiter of the lock on the same
// subscription and goes Linger after it was last freed.
//
// The waiters of one lock form a local first-come-first-served queue. An
// unlock message, or a release by a goroutine of this process (Hub.Release),
// wakes only the head of the queue (or the run of shared waiters at its
// head, for read locks), so a process does not stampede Redis and a
// goroutine that arrives late does not barge past those already waiting.
//
// Nothing piles up: a lock's queue, hand-off count and subscription go
// when its last waiter leaves (a seat's, Linger later), and a Hub goes
// with its client (the registry holds clients weakly, see package
// conn), so a service that makes clients per tenant or per request
// and uses ever new names keeps only what is in use.
package notify
