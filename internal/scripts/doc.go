// Package scripts runs the Lua scripts of the primitives. Each script lives
// in its own .lua file beside the package that owns it, embedded into the
// binary (the go:embed directive) and opened here; calls go out as EVALSHA
// and fall back to EVAL (which also loads the script) only when Redis
// answers NOSCRIPT, so the script body crosses the network once per
// server, not once per call.
//
// The package also names the keys and channels those scripts touch, the
// way Redisson names them, so that every key a script touches shares the
// lock's cluster slot and a Java service using Redisson meets the same
// keys; it computes the Redis Cluster slot of a key, checks lock names,
// and says which commands and key patterns each primitive needs of an
// ACL (MinimalACL).
//
// Call.Synced has an acquisition acknowledged by the replicas of the server
// that wrote it before the acquisition counts: the acquire script and
// WAIT <min(replicas online, required)> <timeout> go out on one connection
// in one round trip, so that a failover promoting one of those replicas
// keeps the hold (the WAIT returns as soon as enough replicas
// acknowledged). ReplicaPolicy says how long to wait and how many
// acknowledgements are enough, and a primitive gives back an acquisition
// that did not get them. The number of replicas of each server a client
// reaches is learned once (INFO replication, or ROLE) and read again when
// it may have changed: after a network error, a redirection or a short
// WAIT, every 10 s in the round trip of a call, and every 250 ms while a
// replica is connected but still syncing. A server without replicas is
// sent the script alone, as if replica sync were off, unless the client
// has seen a replica online on one of its servers, or is a Sentinel
// client: then a master without
// one is refused (ErrNotReplicated) and nothing runs. A user refused both
// INFO and ROLE, or WAIT, gets an error naming the permission
// (ErrReplicaDenied), never a sync quietly turned off; and a server whose
// eviction policy may drop a lock's keys (INFO memory, read with the
// count) is warned of once.
package scripts
