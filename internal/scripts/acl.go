package scripts

import (
	"slices"
	"strings"
)

// Primitive names a kind of lock whose ACL MinimalACL describes.
type Primitive string

// The primitives, as `relock doctor` and the README name them.
const (
	Lock      Primitive = "lock"
	FairLock  Primitive = "fair lock"
	RWLock    Primitive = "rwlock"
	Semaphore Primitive = "semaphore"
	// Redlock's members are locks (or rwlock sides) on independent
	// servers: each server needs its member primitive's ACL, and the
	// adapter sends nothing of its own.
	Redlock Primitive = "redlock"
	// Election is a fair lock with the leader's record and the change
	// channel beside it.
	Election Primitive = "election"
)

// Primitives lists every primitive MinimalACL knows, in the README's order.
var Primitives = []Primitive{Lock, FairLock, RWLock, Semaphore, Redlock, Election}

// Deployment says what, beside the primitive, decides the commands a user
// needs.
type Deployment struct {
	// Cluster: notifications use SPUBLISH/SSUBSCRIBE, and the client reads
	// the slot map (CLUSTER SLOTS) and the command table (COMMAND).
	Cluster bool
	// ReplicaSync: WithReplicaSync is on (the default), so the client
	// reads each server's replicas and eviction policy (INFO, else ROLE)
	// and sends WAIT.
	ReplicaSync bool
}

// ACL is the least a Redis user needs to run one primitive on names that
// begin with a prefix: the commands (as ACL SETUSER spells them, without
// the "+": "client|setinfo" is a subcommand), the key patterns (without
// the "~") and the channel patterns (without the "&").
type ACL struct {
	Primitive Primitive
	Commands  []string
	Keys      []string
	Channels  []string
}

// Rules is a as the arguments of ACL SETUSER after the user's name and
// password: "+cmd" for each command, "~pattern" for each key pattern,
// "&pattern" for each channel pattern. It starts from nothing
// ("resetkeys", "resetchannels", "-@all"), so that what it grants is all
// the user gets.
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

// String is the rules on one line, as they follow `ACL SETUSER <user> on
// ><password>`.
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

// connCommands are what go-redis sends on every new connection (HELLO,
// else AUTH; CLIENT SETINFO too, whose refusal it ignores, so it is left
// out), what the pub/sub connection's health check sends (PING), and how
// every script runs: EVALSHA, EVAL when the server does not have it
// cached, SCRIPT LOAD before a batch of renewals.
var connCommands = []string{"hello", "auth", "ping", "evalsha", "eval", "script|load"}

// replicaCommands read a server's replicas and eviction policy (INFO
// replication and memory, ROLE where INFO is refused) and wait for the
// replicas after an acquisition (WAIT).
var replicaCommands = []string{"info", "role", "wait"}

// clusterCommands let a cluster client learn the slot map and the command
// table.
var clusterCommands = []string{"cluster|slots", "cluster|shards", "command"}

// The commands each primitive's scripts run (redis.call checks each one
// against the user's ACL, with the keys it touches), and those its Go side
// sends directly: the inspections (IsLocked, HoldCount, TTL, Available),
// the holder label (SET, GET, DEL) and ForceUnlock (TYPE; HGETALL for an
// rwlock).
var (
	lockCommands = []string{
		"exists", "hset", "hget", "hexists", "hincrby", "pexpire", "pttl",
		"get", "set", "incr", "del", "time", "type",
	}
	fairCommands = []string{"lindex", "lpop", "lpush", "rpush", "lrem", "zadd", "zrem", "zscore", "hdel"}
	rwCommands   = []string{
		"exists", "hset", "hget", "hmget", "hexists", "hincrby", "hdel", "hlen", "hgetall",
		"pexpire", "pttl", "get", "set", "del", "time", "type",
		"zadd", "zrem", "zrange", "zcard", "zremrangebyscore",
	}
	semCommands = []string{
		"hset", "hget", "hmget", "hexists", "hdel", "hvals", "pexpire", "pttl",
		"get", "set", "del", "time", "type",
		"zadd", "zrem", "zscore", "zrange", "zrangebyscore", "zcard",
	}
)

// Key and channel patterns, for names that begin with prefix. An
// auxiliary key is "aux:{name}" and "{name}:aux", or "aux:name" and
// "name:aux" when the name holds a hash tag of its own (keys.Prefix,
// keys.Suffix): both forms are granted.
func prefixed(aux, prefix string) []string {
	return []string{aux + ":{" + prefix + "*", aux + ":" + prefix + "*"}
}

func tagged(prefix string) []string { return []string{prefix + "*", "{" + prefix + "*"} }

// MinimalACL is the ACL a user needs to run p on names beginning with
// prefix ("app:" for names like "app:order:1"), deployed as d.
func MinimalACL(p Primitive, prefix string, d Deployment) ACL {
	switch p {
	case Redlock:
		a := MinimalACL(Lock, prefix, d)
		a.Primitive = Redlock
		return a
	case Election:
		channels := prefixed("relock_election__channel", prefix)
		return Union(Election, MinimalACL(FairLock, prefix, d), ACL{Commands: []string{"hmget"},
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
	// A fair lock's waiter listens on the lock's channel followed by
	// ":<waiter id>", which the same patterns cover. The scripts name the
	// channel among their keys, so that a cluster routes them to its slot:
	// it is a key pattern too.
	channels := prefixed(channel, prefix)
	return Union(p, ACL{Commands: cmds, Keys: append(keys, channels...), Channels: channels})
}
