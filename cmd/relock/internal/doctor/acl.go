package doctor

import (
	"context"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/minacl"
	"github.com/relock-go/relock/internal/scripts"
)

// sampleOwner and sampleWaiter stand for the ids relock mints, in the
// keys and channels that carry one.
const (
	sampleOwner  = "00000000-0000-4000-8000-000000000000:1"
	sampleWaiter = "00000000-0000-4000-8000-000000000000:r1"
)

// sampleKeys are the keys a primitive writes for a lock called name.
func sampleKeys(p minacl.Primitive, name string) []string {
	common := []string{name, scripts.UnlockLatch(name) + "1", scripts.HolderLabel(name, sampleOwner)}
	switch p {
	case minacl.Lock:
		return append(common, scripts.Token(name), scripts.AcquireLatch(name)+"1")
	case minacl.FairLock:
		return append(common, scripts.Token(name), scripts.AcquireLatch(name)+"1",
			scripts.FairQueue(name), scripts.FairTimeouts(name), scripts.FairWaiters(name))
	case minacl.RWLock:
		return append(common, scripts.Token(name), scripts.AcquireLatch(name)+"1",
			scripts.ReadTimeout(name, sampleOwner, 1), scripts.WriteWaiters(name))
	case minacl.Semaphore:
		return append(common, scripts.Permits(name), scripts.Weights(name), scripts.Waiters(name), scripts.WaiterExpiry(name))
	case minacl.Election:
		return append(sampleKeys(minacl.FairLock, name), scripts.ElectionRecord(name))
	}
	return nil
}

// sampleChannels are the channels a primitive publishes and listens on.
func sampleChannels(p minacl.Primitive, name string) []string {
	switch p {
	case minacl.Lock:
		return []string{scripts.LockChannel(name)}
	case minacl.FairLock:
		return []string{scripts.LockChannel(name), scripts.LockChannel(name) + ":" + sampleWaiter}
	case minacl.RWLock:
		return []string{scripts.RWLockChannel(name)}
	case minacl.Semaphore:
		return []string{scripts.SemaphoreChannel(name)}
	case minacl.Election:
		return append(sampleChannels(minacl.FairLock, name), scripts.ElectionChannel(name))
	}
	return nil
}

// commandArgs is a command line that ACL DRYRUN accepts for command (as
// ACL SETUSER spells it: "script|load" is SCRIPT LOAD), touching the
// primitive's keys and channel, so that the user's key and channel
// patterns are checked with it.
func commandArgs(command string, p minacl.Primitive, name string) []any {
	ks := sampleKeys(p, name)
	list, zset := scripts.FairQueue(name), scripts.FairTimeouts(name)
	if p == minacl.RWLock {
		zset = scripts.WriteWaiters(name)
	} else if p == minacl.Semaphore {
		zset = scripts.Permits(name)
	}
	ch := sampleChannels(p, name)[0]
	args := map[string][]any{
		"hello": {}, "auth": {"x"}, "client|setinfo": {"lib-name", "go-redis"}, "ping": {},
		"evalsha": {strings.Repeat("0", 40), 1, name}, "eval": {"return 1", 1, name},
		"script|load": {"return 1"}, "info": {"replication"}, "role": {}, "wait": {0, 0},
		"cluster|slots": {}, "cluster|shards": {}, "command": {}, "time": {},
		"publish": {ch, "x"}, "spublish": {ch, "x"}, "subscribe": {ch}, "ssubscribe": {ch},
		"unsubscribe": {ch}, "sunsubscribe": {ch},
		"hset": {name, "f", 1}, "hget": {name, "f"}, "hmget": {name, "f"}, "hexists": {name, "f"},
		"hincrby": {name, "f", 1}, "hdel": {name, "f"}, "pexpire": {name, 1000},
		"set": {ks[1], 1}, "lindex": {list, 0}, "lpush": {list, "x"}, "rpush": {list, "x"},
		"lrem": {list, 0, "x"}, "zadd": {zset, 1, "x"}, "zrem": {zset, "x"}, "zscore": {zset, "x"},
		"zrange": {zset, 0, -1}, "zremrangebyscore": {zset, 0, 1}, "zrangebyscore": {zset, 0, 1},
		"zcount": {zset, 0, 1},
	}
	a, ok := args[command]
	if !ok {
		a = []any{name} // exists, get, del, pttl, type, hlen, hgetall, hvals, lpop, zcard
		if strings.HasPrefix(command, "l") {
			a = []any{list}
		} else if strings.HasPrefix(command, "z") {
			a = []any{zset}
		}
	}
	var line []any
	for part := range strings.SplitSeq(command, "|") {
		line = append(line, part)
	}
	return append(line, a...)
}

// lacks is what a user may not do.
type lacks struct {
	commands, keys, channels, unchecked []string
}

func (l *lacks) none() bool { return len(l.commands)+len(l.keys)+len(l.channels) == 0 }

// note files one ACL DRYRUN reply (or the NOPERM of a command tried).
func (l *lacks) note(label string, reply string, err error) {
	if err != nil {
		if strings.Contains(err.Error(), "not found") || strings.Contains(err.Error(), "unknown") {
			return // the server has no such command, so the client never sends it
		}
		l.unchecked = appendNew(l.unchecked, label+" ("+err.Error()+")")
		return
	}
	if strings.EqualFold(reply, "OK") {
		return
	}
	quoted := reply
	if _, rest, ok := strings.Cut(reply, "'"); ok {
		quoted, _, _ = strings.Cut(rest, "'")
	}
	switch {
	case strings.Contains(reply, "command"):
		l.commands = appendNew(l.commands, quoted)
	case strings.Contains(reply, "channel"):
		l.channels = appendNew(l.channels, quoted)
	case strings.Contains(reply, "key"):
		l.keys = appendNew(l.keys, quoted)
	default:
		l.unchecked = appendNew(l.unchecked, label+" ("+reply+")")
	}
}

func appendNew(s []string, v string) []string {
	if slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}

func (n *node) clustered() bool { return n.cluster || n.info["cluster_enabled"] == "1" }

// acl checks, primitive by primitive, that the user may run every command
// relock sends, on the keys and channels of a lock called cfg.Name.
func (n *node) acl(ctx context.Context) []Finding {
	user := n.cfg.ACLUser
	if user == "" {
		who, err := n.c.Do(ctx, "acl", "whoami").Text()
		if err != nil {
			return []Finding{n.probe(ctx, fmt.Errorf("ACL WHOAMI: %w", err))}
		}
		user = who
	}
	if _, err := n.c.Do(ctx, "acl", "dryrun", user, "ping").Text(); err != nil {
		err = fmt.Errorf("ACL DRYRUN: %w", err)
		if n.cfg.ACLUser != "" {
			return []Finding{{Check: "acl", Severity: Info,
				Message: fmt.Sprintf("could not check user %q: %v", user, err),
				Fix:     "run the doctor as a user that may run ACL DRYRUN (Redis 7.0 or newer)"}}
		}
		return []Finding{n.probe(ctx, err)}
	}
	var fs []Finding
	var lock lacks
	for _, p := range minacl.Primitives {
		// A Redlock's members are locks, each on its own server: what a
		// lock lacks here, the Redlock lacks on this member.
		l := lock
		if p != minacl.Redlock {
			l = n.dryrun(ctx, user, p)
		}
		if p == minacl.Lock {
			lock = l
		}
		acl := minacl.For(p, n.cfg.Name, minacl.Deployment{Cluster: n.clustered(), ReplicaSync: true})
		fs = append(fs, l.finding(p, user, n.cfg.Name, acl))
	}
	return fs
}

// dryrun checks one primitive with ACL DRYRUN, all in one pipeline.
func (n *node) dryrun(ctx context.Context, user string, p minacl.Primitive) lacks {
	name := n.cfg.Name
	acl := minacl.For(p, name, minacl.Deployment{Cluster: n.clustered(), ReplicaSync: true})
	pub, sub := "publish", "subscribe"
	if n.clustered() {
		pub, sub = "spublish", "ssubscribe"
	}
	var lines [][]any
	for _, c := range acl.Commands {
		lines = append(lines, commandArgs(c, p, name))
	}
	for _, k := range sampleKeys(p, name) {
		lines = append(lines, []any{"pttl", k}, []any{"pexpire", k, 1000})
	}
	for _, ch := range sampleChannels(p, name) {
		lines = append(lines, []any{pub, ch, "x"}, []any{sub, ch})
	}
	pipe := n.c.Pipeline()
	cmds := make([]*redis.Cmd, len(lines))
	for i, l := range lines {
		cmds[i] = pipe.Do(ctx, append([]any{"acl", "dryrun", user}, l...)...)
	}
	_, _ = pipe.Exec(ctx)
	var l lacks
	for i, cmd := range cmds {
		reply, err := cmd.Text()
		l.note(fmt.Sprint(lines[i]...), reply, err)
	}
	return l
}

// finding turns what a user lacks for p into a finding whose fix is the
// ACL SETUSER that grants it.
func (l *lacks) finding(p minacl.Primitive, user, name string, acl minacl.ACL) Finding {
	f := Finding{Check: "acl", Severity: OK}
	if l.none() {
		f.Message = fmt.Sprintf("%s: user %q may run every command it needs, on the keys and channels of a lock named %q", p, user, name)
	} else {
		f.Severity = Error
		var what, grant []string
		if len(l.commands) > 0 {
			what = append(what, plural("command", l.commands)+" "+strings.Join(l.commands, ", "))
			for _, c := range l.commands {
				grant = append(grant, "+"+c)
			}
		}
		if len(l.keys) > 0 {
			what = append(what, plural("key", l.keys)+" "+strings.Join(l.keys, ", "))
			grant = append(grant, covering("~", acl.Keys, l.keys)...)
		}
		if len(l.channels) > 0 {
			what = append(what, plural("channel", l.channels)+" "+strings.Join(l.channels, ", "))
			grant = append(grant, covering("&", acl.Channels, l.channels)...)
		}
		f.Message = fmt.Sprintf("%s: user %q may not use %s (tried with a lock named %q)", p, user, strings.Join(what, "; "), name)
		f.Fix = "ACL SETUSER " + user + " " + strings.Join(grant, " ")
		if len(l.keys)+len(l.channels) > 0 {
			f.Fix += " (patterns for names beginning with " + name + "; docs/operations.md lists the minimal ACL for a prefix)"
		}
		f.Fix += ", or ignore this if you do not use " + string(p)
	}
	if p == minacl.Redlock {
		f.Message += "; each member server needs what a lock needs"
	}
	if len(l.unchecked) > 0 {
		f.Severity = max(f.Severity, Info)
		f.Message += "; could not check " + strings.Join(l.unchecked, ", ")
	}
	return f
}

func plural(word string, s []string) string {
	if len(s) == 1 {
		return word
	}
	return word + "s"
}

// covering returns, marked, the patterns that match one of the names;
// all of them when none does.
func covering(mark string, patterns, names []string) []string {
	var out []string
	for _, p := range patterns {
		for _, n := range names {
			if ok, _ := path.Match(p, n); ok {
				out = appendNew(out, mark+p)
			}
		}
	}
	if len(out) == 0 {
		for _, p := range patterns {
			out = append(out, mark+p)
		}
	}
	return out
}

// probe checks, where ACL DRYRUN is refused or missing, what the
// connection's own user may read, by running read commands that change
// nothing; writes, scripts and pub/sub cannot be tried without side
// effects, so they stay unchecked.
func (n *node) probe(ctx context.Context, why error) Finding {
	name := n.cfg.Name
	var lines [][]any
	lines = append(lines, []any{"time"}, []any{"exists", name}, []any{"hget", name, "f"},
		[]any{"zscore", scripts.Permits(name), "x"}, []any{"lindex", scripts.FairQueue(name), 0})
	for _, p := range minacl.Primitives {
		for _, k := range sampleKeys(p, name) {
			lines = append(lines, []any{"pttl", k})
		}
	}
	pipe := n.c.Pipeline()
	cmds := make([]*redis.Cmd, len(lines))
	for i, l := range lines {
		cmds[i] = pipe.Do(ctx, l...)
	}
	_, _ = pipe.Exec(ctx)
	var l lacks
	for i, cmd := range cmds {
		if err := cmd.Err(); denied(err) {
			l.note(fmt.Sprint(lines[i]...), strings.TrimPrefix(err.Error(), "NOPERM "), nil)
		}
	}
	f := Finding{Check: "acl", Severity: Info,
		Message: fmt.Sprintf("could not check the permissions with ACL DRYRUN (%v); ", why),
		Fix:     "run the doctor as a user that may run ACL WHOAMI and ACL DRYRUN (Redis 7.0 or newer) to check every command"}
	if l.none() {
		f.Message += "the read commands tried as this user (TIME, EXISTS, HGET, ZSCORE, LINDEX, PTTL) are allowed; writes, scripts and pub/sub were not checked"
		return f
	}
	f.Severity = Error
	var what []string
	for _, s := range [][]string{l.commands, l.keys, l.channels} {
		what = append(what, s...)
	}
	f.Message += "this user may not use " + strings.Join(what, ", ") + ", which relock's primitives need"
	f.Fix = "grant what is missing (docs/operations.md lists the minimal ACL of each primitive), and " + f.Fix
	return f
}
