package minacl

import (
	"slices"
	"strings"
)

// Primitive names a kind of lock whose ACL For describes.
type Primitive string

// The primitives, as `relock doctor` and the README name them.
const (
	Lock      Primitive = "lock"
	FairLock  Primitive = "fair lock"
	RWLock    Primitive = "rwlock"
	Semaphore Primitive = "semaphore"
	// Redlock's members are locks (or rwlock sides) on independent
	// servers, each needing its member's ACL; the adapter sends nothing.
	Redlock Primitive = "redlock"
	// Election is a fair lock plus the leader's record and change channel.
	Election Primitive = "election"
)

// Primitives lists every primitive For knows, in the README's order.
var Primitives = []Primitive{Lock, FairLock, RWLock, Semaphore, Redlock, Election}

// Deployment is what, beside the primitive, decides the commands needed.
type Deployment struct {
	// Cluster: sharded pub/sub, and clusterCommands.
	Cluster bool
	// ReplicaSync: WithReplicaSync is on (the default): INFO, ROLE, WAIT.
	ReplicaSync bool
}

// ACL is the least a Redis user needs to run one primitive on names with
// a prefix: commands as ACL SETUSER spells them ("client|setinfo" is a
// subcommand), key and channel patterns, all without "+", "~" or "&".
type ACL struct {
	Primitive Primitive
	Commands  []string
	Keys      []string
	Channels  []string
}

// Rules is a as ACL SETUSER arguments after the user's name and password
// ("+cmd", "~keys", "&channels"), starting from nothing ("resetkeys",
// "resetchannels", "-@all") so that what it grants is all the user gets.
func (a ACL) Rules() []string {
	out := []string{"resetkeys", "resetchannels", "-@all"}
	for _, c := range a.Commands {
		out = append(out, "+"+c)
	}
	for _, k := range a.Keys {
		out = append(out, "~"+k)
	}
	for _, c := range a.Channels {
		out = append(out, "&"+c)
	}
	return out
}

// String is the rules on one line, after `ACL SETUSER <user> on ><password>`.
func (a ACL) String() string { return strings.Join(a.Rules(), " ") }

// Union is the ACL that grants what every one of acls grants.
func Union(p Primitive, acls ...ACL) ACL {
	u := ACL{Primitive: p}
	for _, a := range acls {
		u.Commands = append(u.Commands, a.Commands...)
		u.Keys = append(u.Keys, a.Keys...)
		u.Channels = append(u.Channels, a.Channels...)
	}
	u.Commands, u.Keys, u.Channels = sorted(u.Commands), sorted(u.Keys), sorted(u.Channels)
	return u
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

// connCommands: go-redis's connection setup (HELLO, else AUTH; CLIENT
// SETINFO's refusal is ignored), the pub/sub health check (PING), and the
// script commands (SCRIPT LOAD before a batch of renewals).
var connCommands = []string{"hello", "auth", "ping", "evalsha", "eval", "script|load"}

// replicaCommands count replicas, read the eviction policy, and WAIT.
var replicaCommands = []string{"info", "role", "wait"}

// clusterCommands read a cluster's slot map and command table.
var clusterCommands = []string{"cluster|slots", "cluster|shards", "command"}

// The commands each primitive's scripts run (redis.call checks each
// against the ACL), and those its Go side sends: inspections, the holder
// label (SET, GET, DEL) and ForceUnlock (TYPE; HGETALL for an rwlock).
var (
	lockCommands = []string{
		"exists", "hset", "hget", "hexists", "hincrby", "pexpire", "pttl",
		"get", "set", "incr", "del", "time", "type",
	}
	fairCommands = []string{"lindex", "lpop", "lpush", "rpush", "lrem", "zadd", "zrem", "zscore", "hdel"}
	rwCommands   = []string{
		"exists", "hset", "hget", "hmget", "hexists", "hincrby", "hdel", "hlen", "hgetall",
		"pexpire", "pttl", "get", "set", "del", "time", "type",
		"zadd", "zrem", "zrange", "zcount", "zremrangebyscore",
	}
	semCommands = []string{
		"hset", "hget", "hmget", "hexists", "hdel", "hvals", "pexpire", "pttl",
		"get", "set", "del", "time", "type",
		"zadd", "zrem", "zscore", "zrange", "zrangebyscore", "zcard",
	}
)

// Key and channel patterns for names that begin with prefix. Both forms
// of auxiliary keys are granted: "aux:{name}" and "{name}:aux", or
// "aux:name" and "name:aux" when the name holds its own hash tag.
func prefixed(aux, prefix string) []string {
	return []string{aux + ":{" + prefix + "*", aux + ":" + prefix + "*"}
}

func tagged(prefix string) []string { return []string{prefix + "*", "{" + prefix + "*"} }

// For is the ACL a user needs to run p on names beginning with
// prefix ("app:" for names like "app:order:1"), deployed as d.
func For(p Primitive, prefix string, d Deployment) ACL {
	switch p {
	case Redlock:
		a := For(Lock, prefix, d)
		a.Primitive = Redlock
		return a
	case Election:
		channels := prefixed("relock_election__channel", prefix)
		return Union(Election, For(FairLock, prefix, d), ACL{Commands: []string{"hmget"},
			Keys: slices.Concat(prefixed("relock_election", prefix), channels), Channels: channels})
	}
	cmds := slices.Clone(connCommands)
	if d.ReplicaSync {
		cmds = append(cmds, replicaCommands...)
	}
	pub := []string{"publish", "subscribe", "unsubscribe"}
	if d.Cluster {
		cmds = append(cmds, clusterCommands...)
		pub = []string{"spublish", "ssubscribe", "sunsubscribe"}
	}
	cmds = append(cmds, pub...)
	keys := slices.Concat([]string{prefix + "*"}, prefixed("relock_holder", prefix))
	var channel string
	switch p {
	case Lock, FairLock:
		cmds = append(cmds, lockCommands...)
		keys = slices.Concat(keys, prefixed("redisson_lock_token", prefix),
			prefixed("redisson_unlock_latch", prefix), prefixed("relock_acquire_latch", prefix))
		channel = "redisson_lock__channel"
		if p == FairLock {
			cmds = append(cmds, fairCommands...)
			keys = slices.Concat(keys, prefixed("redisson_lock_queue", prefix),
				prefixed("redisson_lock_timeout", prefix), prefixed("relock_fair_waiter", prefix))
		}
	case RWLock:
		cmds = append(cmds, rwCommands...)
		keys = slices.Concat(keys, tagged(prefix), prefixed("redisson_lock_token", prefix),
			prefixed("redisson_unlock_latch", prefix), prefixed("relock_acquire_latch", prefix))
		channel = "redisson_rwlock"
	case Semaphore:
		cmds = append(cmds, semCommands...)
		keys = slices.Concat(keys, tagged(prefix), prefixed("redisson_unlock_latch", prefix))
		channel = "redisson_sc"
	}
	// The patterns cover a fair waiter's "<channel>:<waiter id>". Scripts
	// pass the channel among their keys (cluster routing): a key pattern too.
	channels := prefixed(channel, prefix)
	return Union(p, ACL{Commands: cmds, Keys: append(keys, channels...), Channels: channels})
}
