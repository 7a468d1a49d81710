package doctor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// configParams are the settings read with CONFIG GET: those INFO does not
// show (appendfsync, save, min-replicas-*), and those it does, for a user
// that may run CONFIG GET but not INFO.
var configParams = []string{
	"maxmemory", "maxmemory-policy", "appendonly", "appendfsync", "save",
	"min-replicas-to-write", "min-replicas-max-lag",
}

// node is what was read of one server, once, for every check.
type node struct {
	addr    string
	c       *redis.Client
	want    role
	cluster bool // checked as a cluster master
	info    map[string]string
	infoErr error // why INFO could not be read; nil when it was
	conf    map[string]string
	confErr error // why CONFIG GET could not be read
	cfg     Config
}

// checkNode runs every check against one server.
func checkNode(ctx context.Context, c *redis.Client, want role, cluster bool, cfg Config) []Finding {
	n := &node{addr: c.Options().Addr, c: c, want: want, cluster: cluster, cfg: cfg}
	if err := c.Ping(ctx).Err(); err != nil {
		return []Finding{{Node: n.addr, Check: "connection", Severity: Error,
			Message: fmt.Sprintf("could not reach the server: %v", err),
			Fix:     "check the address, the password (REDIS_URL carries it) and that the server is up"}}
	}
	n.read(ctx)
	fs := []Finding{n.version(ctx)}
	fs = append(fs, n.eviction())
	if f, ok := n.memory(); ok {
		fs = append(fs, f)
	}
	fs = append(fs, n.persistence())
	fs = append(fs, n.replicas(ctx)...)
	fs = append(fs, n.clock(ctx))
	fs = append(fs, n.acl(ctx)...)
	for i := range fs {
		fs[i].Node = n.addr
	}
	return fs
}

// read fills info and conf. A server may refuse either (a user without
// the permission, a proxy, an embedded server): each check then falls
// back on the other, and says what it could not read.
func (n *node) read(ctx context.Context) {
	s, err := n.c.Info(ctx).Result()
	if err != nil {
		n.infoErr = fmt.Errorf("INFO: %w", err)
	} else {
		n.info = parseInfo(s)
	}
	n.conf = map[string]string{}
	pipe := n.c.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(configParams))
	for i, p := range configParams {
		cmds[i] = pipe.ConfigGet(ctx, p)
	}
	_, _ = pipe.Exec(ctx)
	for _, cmd := range cmds {
		m, err := cmd.Result()
		if err != nil {
			n.confErr = fmt.Errorf("CONFIG GET: %w", err)
			continue
		}
		for k, v := range m {
			n.conf[k] = v
		}
	}
}

// parseInfo splits INFO's "key:value" lines; section headers and blank
// lines are skipped.
func parseInfo(s string) map[string]string {
	m := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// setting returns the value INFO shows under infoKey, else CONFIG GET's
// under confKey; ok is false when neither has it.
func (n *node) setting(infoKey, confKey string) (v string, ok bool) {
	if v, ok := n.info[infoKey]; ok && infoKey != "" {
		return v, true
	}
	v, ok = n.conf[confKey]
	return v, ok
}

// unread says why a setting could not be read, for a "could not read"
// finding.
func (n *node) unread() string {
	var why []string
	for _, err := range []error{n.infoErr, n.confErr} {
		if err != nil {
			why = append(why, err.Error())
		}
	}
	if n.infoErr == nil {
		why = append(why, "INFO lacks it")
	}
	return strings.Join(why, "; ")
}

// denied reports whether err is Redis's NOPERM: the user may not run the
// command (not "unknown command", as from a proxy or miniredis).
func denied(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && strings.HasPrefix(rerr.Error(), "NOPERM")
}

// version reports the server's version and mode, and whether relock can
// run on them at all.
func (n *node) version(ctx context.Context) Finding {
	f := Finding{Check: "version", Severity: Info}
	ver := n.info["redis_version"]
	mode := cmp.Or(n.info["redis_mode"], n.info["server_mode"]) // Valkey: server_mode
	if ver == "" {
		f.Message = "could not read the server's version (" + n.unread() + ")"
		return f
	}
	major, minor := parseVersion(ver)
	name := "redis " + ver
	if s := n.info["server_name"]; s != "" && s != "redis" {
		name = s + " " + cmp.Or(n.info[s+"_version"], ver) + " (redis_version " + ver + ")"
	}
	clustered := n.info["cluster_enabled"] == "1"
	f.Message = name + ", " + cmp.Or(mode, "standalone")
	switch {
	case mode == "sentinel":
		f.Severity = Error
		f.Message = name + " is a Sentinel, not a data server"
		f.Fix = "check the master through its Sentinels: relock doctor --sentinel ADDR,... --master NAME"
	case major < 5:
		f.Severity = Error
		f.Message += ": relock's scripts read TIME before writing, which Redis refuses before 5.0"
		f.Fix = "upgrade to Redis 7.0 or newer"
	case clustered && major < 7:
		f.Severity = Error
		f.Message += ": a cluster needs Redis 7.0 or newer for sharded pub/sub (SPUBLISH, SSUBSCRIBE)"
		f.Fix = "upgrade the cluster to Redis 7.0 or newer"
	case clustered && !n.cluster:
		f.Message += ": this node belongs to a Redis Cluster; relock needs a ClusterClient there, and the other masters need checking too"
		f.Fix = "relock doctor --cluster --addr " + n.addr
	case major < 7:
		f.Message += fmt.Sprintf(": relock is tested on 7.0; %d.%d has no ACL DRYRUN, so permissions are only probed", major, minor)
	}
	if clustered && f.Severity < Error {
		if st, err := n.c.ClusterInfo(ctx).Result(); err == nil {
			if state := parseInfo(st)["cluster_state"]; state != "ok" {
				f.Severity = Error
				f.Message += "; cluster_state is " + state + ": the cluster refuses commands"
				f.Fix = "repair the cluster (CLUSTER INFO, redis-cli --cluster check)"
			}
		}
	}
	return f
}

func parseVersion(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	major, _ = strconv.Atoi(parts[0])
	if len(parts) > 1 {
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}
