package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/doctor"
	"github.com/relock-go/relock/internal/scripts"
)

// doctorExit ends Run with code, after printing err when it is set: the
// doctor's exit code says the worst severity it found.
type doctorExit struct {
	code int
	err  error
}

func (e doctorExit) Error() string {
	if e.err != nil {
		return e.err.Error()
	}
	return fmt.Sprintf("doctor: exit %d", e.code)
}

// doctorUsage gives a bad command line of doctor its own exit code.
func doctorUsage(err error) error {
	var ue usageError
	if errors.As(err, &ue) {
		ue.code = ExitDoctorUsage
		return ue
	}
	return err
}

// doctorFlags are the flags only doctor takes.
type doctorFlags struct {
	sentinel, master, aclUser, name string
	skew                            time.Duration
}

// doctor checks the server, Sentinel set or cluster against relock's
// guarantees and prints the findings.
func (a *App) doctor(ctx context.Context, c *common, fs *flag.FlagSet, args []string) error {
	var d doctorFlags
	fs.StringVar(&d.sentinel, "sentinel", "", "comma-separated Sentinel `addresses`: check the master they name and its replicas")
	fs.StringVar(&d.master, "master", "", "the master's `name` at the Sentinels")
	fs.DurationVar(&d.skew, "skew", doctor.DefaultSkew, "clock difference above which to warn")
	fs.StringVar(&d.aclUser, "acl-user", "", "the `user` whose permissions to check (default: the connection's)")
	fs.StringVar(&d.name, "name", doctor.DefaultName, "a lock `name` to check key and channel permissions with")
	pos, err := parse(fs, args)
	if err != nil {
		return doctorUsage(err)
	}
	// --cluster is a boolean flag, so "--cluster a,b" leaves the seeds
	// as an argument; doctor takes none, so they can only be seeds.
	if c.cluster.on && c.cluster.seeds == "" && c.addr == "" && len(pos) == 1 {
		c.cluster.seeds, pos = pos[0], nil
	}
	if err := d.check(c, pos); err != nil {
		return doctorUsage(err)
	}
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	cfg := doctor.Config{Skew: d.skew, ACLUser: d.aclUser, Name: d.name}
	var rep doctor.Report
	if d.sentinel != "" {
		node, err := sentinelNode(a.getenv)
		if err != nil {
			return doctorUsage(err)
		}
		rep = doctor.CheckSentinel(ctx, splitAddrs(d.sentinel), d.master, node, cfg)
	} else {
		client, err := c.client(a.getenv)
		if err != nil {
			return doctorUsage(err)
		}
		defer client.Close()
		switch cl := client.(type) {
		case *redis.ClusterClient:
			rep = doctor.CheckCluster(ctx, cl, cfg)
		case *redis.Client:
			rep = doctor.CheckServer(ctx, cl, cfg)
		}
	}
	if c.json {
		err = rep.WriteJSON(a.Stdout)
	} else {
		err = rep.WriteText(a.Stdout)
	}
	if err != nil {
		return doctorExit{code: ExitDoctorError, err: fmt.Errorf("doctor: write the report: %w", err)}
	}
	switch rep.Worst {
	case doctor.Error:
		return doctorExit{code: ExitDoctorError}
	case doctor.Warn:
		return doctorExit{code: ExitDoctorWarn}
	}
	return nil
}

// check refuses the combinations of flags that mean nothing.
func (d *doctorFlags) check(c *common, pos []string) error {
	switch {
	case len(pos) > 0:
		return usagef("doctor takes no arguments, got %q (seeds go in --addr or --cluster=a,b)", pos)
	case d.sentinel != "" && c.cluster.on:
		return usagef("--sentinel and --cluster exclude each other")
	case d.sentinel != "" && c.addr != "":
		return usagef("with --sentinel, the Sentinels' addresses go in --sentinel, not --addr")
	case (d.sentinel == "") != (d.master == ""):
		return usagef("--sentinel and --master go together")
	case d.sentinel != "" && len(splitAddrs(d.sentinel)) == 0:
		return usagef("--sentinel: no address")
	case d.skew <= 0:
		return usagef("--skew %v: must be positive", d.skew)
	case d.name == "":
		return usagef("--name: empty lock name")
	}
	if why := scripts.CheckName(d.name); why != "" {
		return usagef("--name: %s", why)
	}
	return nil
}

// sentinelNode is the options of the master and replicas a Sentinel
// names: REDIS_URL's user, password, database and TLS when it is set
// (its address is replaced by the one the Sentinel gives).
func sentinelNode(getenv func(string) string) (redis.Options, error) {
	url := getenv("REDIS_URL")
	if url == "" {
		return redis.Options{}, nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return redis.Options{}, usagef("REDIS_URL: %v", err)
	}
	return *opt, nil
}

func splitAddrs(s string) []string {
	var out []string
	for _, a := range strings.Split(s, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}
