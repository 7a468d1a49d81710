package doctor

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"
)

const evictionFix = "CONFIG SET maxmemory-policy noeviction (then CONFIG REWRITE to keep it), " +
	"or keep relock's keys on a Redis of their own with noeviction"

// eviction checks that Redis never evicts a held lock's key: if it did,
// another owner would take the lock while its holder still runs.
func (n *node) eviction() Finding {
	f := Finding{Check: "eviction"}
	policy, okP := n.setting("maxmemory_policy", "maxmemory-policy")
	limit, okM := n.setting("maxmemory", "maxmemory")
	mem, err := strconv.ParseInt(limit, 10, 64)
	if !okP || !okM || err != nil {
		f.Severity = Warn
		f.Message = "could not read maxmemory and maxmemory-policy (" + n.unread() +
			"): cannot tell whether Redis may evict a held lock"
		f.Fix = "let the doctor's user run INFO or CONFIG GET, or check by hand that maxmemory-policy is noeviction wherever maxmemory is set"
		return f
	}
	switch {
	case mem == 0:
		f.Severity = OK
		f.Message = "maxmemory 0 (no limit): nothing is evicted, whatever maxmemory-policy (" + policy + ") says"
		if policy != "noeviction" {
			f.Message += "; setting a limit later would let " + policy + " evict held locks"
		}
	case policy == "noeviction":
		f.Severity = OK
		f.Message = "maxmemory-policy noeviction (maxmemory " + bytes(mem) + "): Redis never evicts a held lock; " + atTheLimit
	case strings.HasPrefix(policy, "allkeys-"):
		f.Severity = Error
		f.Message = "maxmemory-policy " + policy + " with maxmemory " + bytes(mem) +
			": when memory runs out Redis evicts any key, held locks among them, and another owner takes a lock while its holder still runs"
		f.Fix = evictionFix
	case strings.HasPrefix(policy, "volatile-"):
		f.Severity = Error
		f.Message = "maxmemory-policy " + policy + " with maxmemory " + bytes(mem) +
			": when memory runs out Redis evicts keys that have a TTL, and every key relock writes has one, so held locks go first and another owner takes them while their holders still run"
		f.Fix = evictionFix
	default:
		f.Severity = Warn
		f.Message = "maxmemory-policy " + policy + " (unknown to the doctor) with maxmemory " + bytes(mem) + ": it may evict held locks"
		f.Fix = evictionFix
	}
	return f
}

// atTheLimit is what a full server under noeviction does to locks: it
// refuses the writes that need memory, and a renewal or a release needs
// none.
const atTheLimit = "at the limit it refuses writes that need memory, so new acquisitions fail with an OOM error, " +
	"while holds already granted are still renewed and released"

// memoryWarnPercent is the share of maxmemory from which memory warns.
const memoryWarnPercent = 90

// memory reports how near the server is to maxmemory, where it stops
// granting locks (noeviction) or evicts them (eviction reports that);
// ok is false without a limit.
func (n *node) memory() (f Finding, ok bool) {
	f = Finding{Check: "memory"}
	limit, _ := n.setting("maxmemory", "maxmemory")
	mem, err := strconv.ParseInt(limit, 10, 64)
	if err != nil || mem <= 0 {
		return f, false
	}
	used, err := strconv.ParseInt(n.info["used_memory"], 10, 64)
	if err != nil {
		f.Severity = Warn
		f.Message = "could not read used_memory (" + n.unread() + "): cannot tell how near the server is to maxmemory " + bytes(mem)
		f.Fix = "let the doctor's user run INFO, or watch used_memory against maxmemory by hand"
		return f, true
	}
	pct := used * 100 / mem
	f.Message = fmt.Sprintf("used_memory is %d%% of maxmemory (%d of %d bytes)", pct, used, mem)
	policy, _ := n.setting("maxmemory_policy", "maxmemory-policy")
	switch {
	case pct < memoryWarnPercent:
		f.Severity = OK
		return f, true
	case policy != "noeviction":
		f.Message += ": near the limit or over it, where Redis evicts keys (see eviction)"
	case used >= mem:
		f.Message += ": over the limit: every new acquisition fails with an OOM error now, while holds already granted are still renewed and released"
	default:
		f.Message += ": near the limit, where new acquisitions fail with an OOM error while holds already granted are still renewed and released"
	}
	f.Severity = Warn
	f.Fix = "raise maxmemory (CONFIG SET maxmemory, then CONFIG REWRITE to keep it), or free memory on this server"
	return f, true
}

// bytes formats a memory size for a message.
func bytes(n int64) string {
	const mib = 1 << 20
	if n >= mib {
		return fmt.Sprintf("%d bytes (%.1f MiB)", n, float64(n)/mib)
	}
	return fmt.Sprintf("%d bytes", n)
}

const persistenceFix = "CONFIG SET appendonly yes and CONFIG SET appendfsync everysec (or always), then CONFIG REWRITE; " +
	"or restart a server only after the longest lease has passed, so that no lock it forgot is still held"

// persistence checks what a restart keeps of the locks. A restart that
// forgets a lock lets another owner take it while its holder keeps going;
// fencing tokens still increase (they are drawn from the server's TIME),
// but mutual exclusion breaks.
func (n *node) persistence() Finding {
	f := Finding{Check: "persistence"}
	aof, ok := n.conf["appendonly"]
	if !ok {
		switch n.info["aof_enabled"] {
		case "1":
			aof, ok = "yes", true
		case "0":
			aof, ok = "no", true
		}
	}
	if !ok {
		f.Severity = Warn
		f.Message = "could not read whether AOF or RDB persistence is on (" + n.unread() + ")"
		f.Fix = "let the doctor's user run CONFIG GET or INFO, or check appendonly, appendfsync and save by hand"
		return f
	}
	save, saveOK := n.conf["save"]
	fsync := n.conf["appendfsync"]
	switch {
	case aof == "yes" && fsync == "always":
		f.Severity = OK
		f.Message = "AOF with appendfsync always: every lock the server granted survives a restart"
	case aof == "yes" && fsync == "everysec":
		f.Severity = Info
		f.Message = "AOF with appendfsync everysec: a crash loses up to a second of writes, so a lock granted in that second is forgotten on restart while its holder keeps going"
		f.Fix = "appendfsync always closes that second, at a cost in write latency"
	case aof == "yes" && fsync == "no":
		f.Severity = Warn
		f.Message = "AOF with appendfsync no: the operating system writes it out when it likes (about every 30 s), so a crash forgets the locks granted since, while their holders keep going"
		f.Fix = "CONFIG SET appendfsync everysec (or always)"
	case aof == "yes":
		f.Severity = Info
		f.Message = "AOF on; appendfsync could not be read (" + n.unread() + ")"
	case saveOK && strings.TrimSpace(save) != "":
		f.Severity = Warn
		f.Message = "RDB snapshots only (save \"" + save + "\"), no AOF: a restart brings back the last snapshot, which misses every lock granted since (with leases of seconds, nearly all of them): their holders keep going while others take them. Fencing tokens keep increasing (they follow the server's TIME), but mutual exclusion breaks"
		f.Fix = persistenceFix
	case saveOK:
		f.Severity = Warn
		f.Message = "no persistence (no AOF, no RDB snapshots): a restart forgets every lock, and their holders keep going while others take them. Fencing tokens keep increasing (they follow the server's TIME), but mutual exclusion breaks"
		f.Fix = persistenceFix
	default:
		f.Severity = Warn
		f.Message = "no AOF, and whether RDB snapshots are taken could not be read (" + n.unread() + "): a restart forgets the locks granted since the last snapshot, if any, while their holders keep going"
		f.Fix = persistenceFix
	}
	return f
}

// replicaState is a replica as its master's INFO lists it.
type replicaState struct{ addr, state string }

// replicasOf lists the replicas in a master's INFO replication.
func (n *node) replicasOf() []replicaState {
	count, _ := strconv.Atoi(n.info["connected_slaves"])
	var rs []replicaState
	for i := range count {
		fields := map[string]string{}
		for kv := range strings.SplitSeq(n.info["slave"+strconv.Itoa(i)], ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				fields[k] = v
			}
		}
		rs = append(rs, replicaState{addr: fields["ip"] + ":" + fields["port"], state: fields["state"]})
	}
	return rs
}

// replicas checks the server's role and its replicas against relock's
// replica sync (WAIT after each acquisition).
func (n *node) replicas(ctx context.Context) []Finding {
	f := Finding{Check: "replicas"}
	role := n.info["role"]
	if role == "" {
		if reply, err := n.c.Do(ctx, "role").Slice(); err == nil && len(reply) > 0 {
			role, _ = reply[0].(string)
		}
	}
	switch {
	case role == "":
		f.Severity = Warn
		f.Message = "could not read the replication state (" + n.unread() + "; ROLE refused too): relock's replica sync cannot count the replicas either"
		f.Fix = "grant relock's user +info (or +role), or opt out with WithReplicaSync(0) where the server has no replicas"
		return []Finding{f}
	case role == "slave" && n.want == replicaRole:
		return []Finding{n.replicaLink()}
	case role == "slave":
		f.Severity = Warn
		f.Message = "this server is a replica of " + n.info["master_host"] + ":" + n.info["master_port"] + ": it refuses relock's writes"
		f.Fix = "point relock (and the doctor) at the master, or at the Sentinels with --sentinel"
		return []Finding{f}
	case role != "master":
		f.Severity = Warn
		f.Message = "role " + role + ": relock needs a master"
		return []Finding{f}
	case n.want == replicaRole:
		f.Severity = Warn
		f.Message = "the Sentinel lists this server as a replica, but it says it is a master"
		f.Fix = "check the Sentinel's view (SENTINEL REPLICAS) against the servers'"
	}
	return append(appendIf(nil, f), n.masterReplicas()...)
}

func appendIf(fs []Finding, f Finding) []Finding {
	if f.Message != "" {
		fs = append(fs, f)
	}
	return fs
}

// replicaLink checks a Sentinel's replica: a failover can only promote a
// replica that is in sync.
func (n *node) replicaLink() Finding {
	f := Finding{Check: "replicas"}
	master := n.info["master_host"] + ":" + n.info["master_port"]
	if link := n.info["master_link_status"]; link != "up" {
		f.Severity = Warn
		f.Message = "replica of " + master + " with its link " + link + ": a failover to it would lose what it has not received"
		f.Fix = "check the replica's log and its connection to the master"
		return f
	}
	f.Severity = OK
	f.Message = "replica of " + master + ", link up"
	return f
}

// masterReplicas checks a master's replicas and min-replicas-to-write.
func (n *node) masterReplicas() []Finding {
	rs := n.replicasOf()
	online := 0
	var syncing []string
	for _, r := range rs {
		if r.state == "online" {
			online++
		} else {
			syncing = append(syncing, r.addr+" ("+r.state+")")
		}
	}
	var fs []Finding
	if len(syncing) > 0 {
		fs = append(fs, Finding{Check: "replicas", Severity: Info,
			Message: "replicas not yet online, not counted by relock's WAIT until they are: " + strings.Join(syncing, ", ")})
	}
	minWrite, minKnown := n.conf["min-replicas-to-write"]
	need, _ := strconv.Atoi(minWrite)
	good, goodKnown := n.info["min_slaves_good_slaves"]
	f := Finding{Check: "replicas"}
	switch {
	case len(rs) == 0:
		f.Severity = Info
		f.Message = "no replicas: relock sends no WAIT; only persistence keeps the locks through a crash"
	case minKnown && need == 0:
		f.Severity = Info
		f.Message = fmt.Sprintf("%d replicas online, min-replicas-to-write 0: relock WAITs for WithMinReplicas (default 1) of them after each acquisition (WithReplicaSync, default 1 s), so a failover keeps every lock relock granted; releases and renewals are not waited for", online)
		f.Fix = "optionally CONFIG SET min-replicas-to-write 1 (and min-replicas-max-lag 10): a master cut off from its replicas then refuses writes instead of granting locks a failover would lose"
	case goodKnown && minKnown && atoi(good) < need:
		f.Severity = Error
		f.Message = fmt.Sprintf("min-replicas-to-write %d but only %s replicas are good: the master refuses every write (NOREPLICAS), so no lock can be taken", need, good)
		f.Fix = "bring the replicas back, or lower min-replicas-to-write"
	case minKnown:
		f.Severity = OK
		f.Message = fmt.Sprintf("%d replicas online, min-replicas-to-write %d; relock WAITs for the replicas after each acquisition", online, need)
	default:
		f.Severity = Info
		f.Message = fmt.Sprintf("%d replicas online; min-replicas-to-write could not be read (%s); relock WAITs for the replicas after each acquisition", online, n.unread())
	}
	return append(fs, f)
}

func atoi(s string) int {
	i, _ := strconv.Atoi(s)
	return i
}

// clockSamples is how many TIME round trips the clock check makes; the
// fastest one bounds the error best.
const clockSamples = 3

// clock compares the server's TIME with this machine's clock at the
// middle of the round trip.
func (n *node) clock(ctx context.Context) Finding {
	f := Finding{Check: "clock"}
	var skew, rtt time.Duration
	for i := range clockSamples {
		t0 := n.cfg.Now()
		server, err := n.c.Time(ctx).Result()
		t1 := n.cfg.Now()
		if err != nil {
			f.Severity = Warn
			f.Message = fmt.Sprintf("could not read the server's clock: TIME: %v", err)
			f.Fix = "grant +time: relock's scripts call it"
			return f
		}
		d := t1.Sub(t0)
		if i == 0 || d < rtt {
			rtt = d
			skew = server.Sub(t0.Add(d / 2))
		}
	}
	dir := "ahead of"
	if skew < 0 {
		dir = "behind"
	}
	abs := skew.Abs()
	f.Message = fmt.Sprintf("server clock %v %s this machine's (± %v, half the round trip)", abs.Round(time.Millisecond), dir, (rtt / 2).Round(time.Microsecond))
	if abs <= n.cfg.Skew {
		f.Severity = OK
		return f
	}
	f.Severity = Warn
	f.Message += fmt.Sprintf(", above %v. relock times leases on the server's clock: when it steps forward, leases expire early and a second owner takes the lock; when it steps back, a crashed holder's lease lasts longer by the step. Either clock may be the wrong one", n.cfg.Skew)
	f.Fix = "keep both clocks synchronised (NTP, chrony) with slewing, not steps"
	return f
}
