// Package election is leader election on Redis: of the processes that
// campaign under one name, one leads at a time, the others wait in line,
// first come, first served, and anyone may watch who leads.
//
// It is built on the fair lock (lock.NewFair): a candidate is a waiter of
// the fair lock named after the election, and the leadership is that
// lock's hold, renewed by the process's watchdog. So a candidate that dies
// is skipped within seconds, `relock ls` and `relock show` print the
// leader and the line, and the lock's options apply (WithWatchdogTimeout,
// WithLeaseTime, WithReplicaSync...). A leadership's epoch is its hold's
// fencing token: it grows strictly across leaderships, a lost counter
// included, so a store that keeps the largest epoch it has seen refuses a
// superseded leader's writes.
//
// Campaign waits until elected and returns the leading context: done the
// moment the renewal engine knows the lease is lost (cause ErrLockLost),
// or when Resign ends it. Run is the loop most services want: campaign,
// run lead while leading, resign only after lead returns (the work drains
// before the next leader starts), campaign again, until its context ends.
//
// The leader's record, relock_election:{name} (value, epoch, since), is
// written when a candidate is elected and kept alive with the hold (the
// lock renews both in one script), so it lapses with the leadership.
// Leader and the observers trust it only while its owner's hold is in the
// lock. Every change (elected, proclaimed, resigned) is published on
// relock_election__channel:{name}; Observe reports each change once and
// in order, a vacancy between any two leaderships, and heals a missed
// message (or a leader that crashed, which sends none) by reading the
// record at least every third of the lease and when the leader's lease
// would lapse.
//
// Compared with client-go's leaderelection: there Run cannot be
// cancelled, OnStoppedLeading fires for a process that never led, leases
// are timed on each process's local clock, there is no fencing (its own
// documentation says so), and a release on cancel comes before the work
// has drained. Here Run ends with its context, lead is called only once
// elected and nothing is "stopped" for a process that never led, the
// lease is timed by the server, the epoch fences, and Run resigns only
// after lead returns. Compared with etcd's concurrency.Election: its
// Observe misses resignations and deletions (vacancy) and may report a
// stale leader, and Resign on cancel does not wait for the work either;
// here vacancy is a state observers see, and a lapsed lease is never
// reported as leading. etcd's store stays linearizable across a
// failover; Redis does not (see Limits).
//
// Limits. A Redis failover can lose the latest writes: without replica
// sync (WithReplicaSync, on by default where the server has replicas) a
// promoted replica may not have the leader's hold, and a second candidate
// may be elected while the first still leads until its next renewal finds
// the hold gone (up to a third of the lease). The epoch still grows, so a
// store that checks epochs refuses the older leader. A server clock
// stepped forward past the lease ends the leadership early, as it ends
// any lock's. Check is a health check for a readiness probe: it fails on
// the leader whose renewals are late, before its lease can lapse.
package election
