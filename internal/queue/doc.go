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
//
// Who wakes a waiter, and why ("heads": the head, or the run of readers at
// the front; kick: try now; a wake while reserved is noted for End):
//
//	event                             woken                    why
//	unlock message (deliver)          heads, kick; watchers    the lock may be free
//	grant message for the head's      the head, granted        the hold is its already
//	  owner (deliver)
//	local release (Hub.Release)       heads, kick              as an unlock message, sooner
//	resubscribed, slot moved (Missed) heads, kick; watchers    a message may be lost
//	connection broken (Broken)        heads, kick              a message may be lost
//	the head gives up (Leave)         new heads, kick          their turn
//	the head got the lock alone       new head, hint           nothing to try: a fallback
//	  (Leave acquired)                                         timer for the hold
//	a reader head got in (Leave)      new heads, kick          readers may join; a writer
//	                                                           must mark itself waiting
//	End(Handed)                       the waiter, granted      the lock is its
//	End(Refused)                      the waiter, kick         its wake went to a refused
//	                                                           try; the lock may be free
//	End(Passed)                       the waiter, kick if it   it is owed that try
//	                                  was refused a try
package queue
