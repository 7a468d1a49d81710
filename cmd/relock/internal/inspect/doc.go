// Package inspect reads the keys that relock (and Redisson) keep in Redis
// and tells what they are: the library behind the relock CLI
// (cmd/relock), kept out of package main so that it can be tested and
// documented with examples.
//
// A hash is classified by its shape: a mode field makes it an rwlock
// (read or write; readers' counts with the PTTL of their lease keys
// {name}:<owner>:rwlock_timeout:<i>, writers as <owner>:write), size and
// used a semaphore (permits from the {name}:permits zset, whose scores are
// expiries in server milliseconds, weights from {name}:weights, waiters
// from {name}:waiters and {name}:waiter_expiry), and a hash whose every
// field is an owner id <uuid>:<n> with an integer count a lock. Any other
// key is not ours and is left alone. The fencing token is read from
// redisson_lock_token:{name}. Show adds the keys whose ids no record
// lists (holder labels, unlock and acquire latches), found with one SCAN
// for the name's tag on the server that holds its slot.
//
// Every listing uses SCAN (on each master of a cluster), never KEYS, and
// reads only, except ForceUnlock, which releases a lock, rwlock or
// semaphore in one script and publishes the unlock message on the channel
// Redisson uses, so that waiters wake at once.
package inspect
