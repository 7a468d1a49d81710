// Package election is leader election on Redis: of the processes that
// campaign under one name, one leads at a time, the others wait in line,
// first come, first served, and anyone may watch who leads.
//
// A candidate is a waiter of the fair lock (lock.NewFair) named after the
// election, the leadership that lock's hold, renewed by the watchdog: a
// dead candidate is skipped within seconds, `relock ls` and `relock show`
// print the leader and the line, and the lock's options apply. The epoch
// is the hold's fencing token, growing strictly across leaderships (a lost
// counter included): a store keeping the largest seen refuses a superseded leader.
//
// Campaign waits until elected and returns the leading context, done when
// the lease is known lost (cause ErrLockLost) or Resign ends it. Run is
// the loop most services want: campaign, run lead while leading, resign
// only after lead returns, campaign again, until its context ends.
//
// The leader's record, relock_election:{name} (value, epoch, since), is
// written on election and renewed with the hold in one script, so it
// lapses with the leadership; Leader and observers trust it only while
// its owner's hold is in the lock. Every change (elected, proclaimed,
// resigned) is published on relock_election__channel:{name}; Observe
// reports each once, in order, with a vacancy between leaderships, and
// re-reads the record to heal a missed message or a crashed leader.
//
// Unlike client-go's leaderelection, the lease is timed by the server and
// the epoch fences; unlike etcd's concurrency.Election, observers see
// vacancies, but the store is not linearizable across a failover.
//
// Limits. Without replica sync (WithReplicaSync, on by default where the
// server has replicas) a failover may lose the leader's hold and elect a
// second leader while the first leads until its next renewal (up to a
// third of the lease); the epoch still grows, so a store that checks it
// refuses the older leader. A server clock stepped forward past the lease
// ends the leadership early. Check fails on a leader whose renewals are late,
// before its lease lapses: a readiness probe.
package election
