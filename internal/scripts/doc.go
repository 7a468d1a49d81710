// Package scripts runs the Lua scripts of the primitives. Each script is
// embedded from a .lua file beside its package; calls go out as EVALSHA
// and fall back to EVAL (which loads the script) only on NOSCRIPT, so a
// body crosses the network once per server.
//
// It also names the keys and channels the scripts touch, as Redisson
// names them, so that every key of a lock shares its cluster slot and a
// Java service using Redisson meets the same keys; and checks lock names.
//
// Call.Synced has an acquisition acknowledged by replicas (WAIT, in the
// same round trip) before it counts, so that a failover to one of them
// keeps the hold; ReplicaPolicy says how many and how long. A user refused
// the commands sync needs gets ErrReplicaDenied, never a sync quietly off,
// and a server whose eviction policy may drop a lock's keys is warned of.
package scripts
