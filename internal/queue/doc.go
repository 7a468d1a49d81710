// Package queue keeps the local first-come-first-served line of a process's
// goroutines waiting for each lock, and hands a released lock to the head
// of that line. Each Redis client has one Hub, shared by every waiter of
// every lock on that client; it hears unlock messages on one pub/sub
// connection per node (SSUBSCRIBE per shard on a Redis Cluster), a
// channel subscribed while anyone waits on it. An unlock message, or a
// release by a goroutine of this process (Hub.Release), wakes only the
// head of the line (or the run of shared waiters at its head, for read
// locks), so a process does not stampede Redis and a late goroutine does
// not barge past those already waiting. A fair lock's waiter waits on a
// seat (Hub.TakeSeat), a channel that serves the process's next waiter of
// the lock on the same subscription. Nothing piles up: a line, its
// hand-off count and subscription go with its last waiter (a seat's,
// Linger later), and a Hub goes with its client (see package conn).
package queue
