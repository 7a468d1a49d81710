// Package replica has an acquisition acknowledged by the replicas of the
// server that wrote it before the acquisition counts: the acquire script
// and WAIT <min(replicas online, required)> <timeout> go out on one
// connection in one round trip, so that a failover promoting one of those
// replicas keeps the hold (the WAIT returns as soon as enough replicas
// acknowledged: one slow replica among several does not hold every
// acquisition for the timeout). Call is that round trip, for every primitive alike; Policy says
// how long to wait and how many acknowledgements are enough, and a
// primitive gives back an acquisition that did not get them. The number
// of replicas of each server a client reaches is learned once (INFO
// replication, or ROLE) and read again when it may have changed: after a
// network error, a redirection or a short WAIT, every 10 s in the round
// trip of a call, and every 250 ms while a replica is connected but still
// syncing. A server without replicas is sent the script alone, through
// the client's batch, as if replica sync were off. A user refused both
// INFO and ROLE, or WAIT, gets an error naming the permission (ErrDenied),
// never a sync quietly turned off; and a server whose eviction policy may
// drop a lock's keys (INFO memory, read with the count) is warned of once.
package replica
