package cli

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/cmd/relock/internal/inspect"
)

// Exit codes of Run.
const (
	ExitOK    = 0 // done; leaks found none
	ExitError = 1 // a Redis error, a name not found, a refused or aborted unlock
	ExitUsage = 2 // bad command line
	ExitLeaks = 3 // leaks found some
)

// Exit codes of doctor, by the worst severity found, and of its bad
// command lines: usage has a code of its own, since 2 means an error
// found.
const (
	ExitDoctorWarn  = 1  // doctor: a warning, none worse
	ExitDoctorError = 2  // doctor: an error, or a server it could not check
	ExitDoctorUsage = 64 // doctor: bad command line (EX_USAGE)
)

// DefaultAddr is the server used when neither --addr nor REDIS_URL is given.
const DefaultAddr = "127.0.0.1:6379"

// App is the relock command with its surroundings, so that tests can run
// it without a process: main fills it from os.
type App struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	// Getenv reads REDIS_URL.
	Getenv func(string) string
	// Interactive: Stdin is a terminal, so unlock may ask for confirmation.
	// Without it, unlock --force refuses to run without --yes.
	Interactive bool

	// TTL formats a TTL or lease in ms (> 0) for the table; nil: rounded
	// to 0.1 s (1 ms below 1 s). Tests make it coarse.
	TTL func(ms int64) string
	// ID rewrites an owner, permit or waiter id for the table and the
	// prompt; nil: as is. Tests mask the test process's uuid with it.
	ID func(id string) string
}

// usageError is a bad command line: exit 2, or code when it is set.
type usageError struct {
	msg  string
	code int
}

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// errLeaks makes Run exit 3 after leaks printed its findings.
var errLeaks = errors.New("leaks found")

// common are the flags every command takes, before or after its name.
type common struct {
	addr    string
	cluster clusterFlag
	json    bool
	timeout time.Duration
}

// clusterFlag is --cluster: a boolean, or the cluster's seed addresses
// (--cluster=a,b), which then stand for --addr.
type clusterFlag struct {
	on    bool
	seeds string
}

func (f *clusterFlag) IsBoolFlag() bool { return true }

func (f *clusterFlag) String() string {
	if f == nil || !f.on {
		return "false"
	}
	return cmp.Or(f.seeds, "true")
}

func (f *clusterFlag) Set(s string) error {
	if b, err := strconv.ParseBool(s); err == nil {
		f.on, f.seeds = b, ""
		return nil
	}
	f.on, f.seeds = true, s
	return nil
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.addr, "addr", c.addr, "Redis `host:port`; with --cluster, comma-separated seed addresses (default $REDIS_URL, else "+DefaultAddr+")")
	fs.Var(&c.cluster, "cluster", "the server is a Redis Cluster (every master is scanned); --cluster=a,b gives the seeds")
	fs.BoolVar(&c.json, "json", c.json, "print JSON for scripts instead of a table")
	fs.DurationVar(&c.timeout, "timeout", c.timeout, "bound of the whole command")
}

const usageText = `relock inspects relock's (and Redisson's) locks, rwlocks and semaphores in Redis.

Usage:
  relock [flags] ls [pattern]           list locks, rwlocks and semaphores (SCAN MATCH pattern, default *)
  relock [flags] show NAME              one of them, with its keys
  relock [flags] leaks [pattern]        keys without TTL, holders of dead owners, orphaned keys (exit 3 if any)
  relock [flags] unlock --force [--yes] NAME
                                        release NAME whoever holds it and wake its waiters
  relock [flags] doctor [--sentinel addr,... --master name] [--skew 500ms]
                        [--acl-user user] [--name lockname]
                                        check the server's settings against relock's guarantees

Flags (before or after the command):
  --addr host:port   Redis address; with --cluster, comma-separated seeds
                     (default: $REDIS_URL, else 127.0.0.1:6379)
  --cluster          the server is a Redis Cluster (every master is scanned);
                     --cluster=a,b names the seeds instead of --addr
  --json             JSON output for scripts
  --timeout d        bound of the whole command (default 10s)

Exit status: 0 ok, 1 error, 2 usage, 3 leaks found.
doctor: 0 ok or info, 1 warn, 2 error (or a server it could not reach), 64 usage.
`

// Run runs the command line args (without the program name) and returns
// the exit code.
func (a *App) Run(ctx context.Context, args []string) int {
	err := a.run(ctx, args)
	var ue usageError
	switch {
	case err == nil:
		return ExitOK
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(a.Stdout, usageText)
		return ExitOK
	case errors.As(err, &ue):
		fmt.Fprintf(a.Stderr, "relock: %v\n\n%s", err, usageText)
		return cmp.Or(ue.code, ExitUsage)
	case errors.Is(err, errLeaks):
		return ExitLeaks
	}
	var de doctorExit
	if errors.As(err, &de) {
		if de.err != nil {
			fmt.Fprintf(a.Stderr, "relock: %v\n", de.err)
		}
		return de.code
	}
	fmt.Fprintf(a.Stderr, "relock: %v\n", err)
	return ExitError
}

func newFlagSet(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // Run prints the usage once, with the error
	return fs
}

// parse parses fs from args, flags and arguments in any order ("--" ends
// the flags), and returns the arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		rest := fs.Args()
		if consumed := len(args) - len(rest); consumed > 0 && args[consumed-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

func (a *App) run(ctx context.Context, args []string) error {
	c := common{timeout: 10 * time.Second}
	global := newFlagSet("relock")
	c.register(global)
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		if slices.Contains(args, "doctor") {
			return usageError{msg: err.Error(), code: ExitDoctorUsage}
		}
		return usagef("%v", err)
	}
	args = global.Args()
	if len(args) == 0 {
		return usagef("no command")
	}
	cmd, args := args[0], args[1:]
	fs := newFlagSet("relock " + cmd)
	c.register(fs)
	var force, yes bool
	switch cmd {
	case "ls", "show", "leaks":
	case "unlock":
		fs.BoolVar(&force, "force", false, "required: release whoever holds it")
		fs.BoolVar(&yes, "yes", false, "do not ask for confirmation")
	case "doctor":
		return a.doctor(ctx, &c, fs, args)
	case "help":
		return flag.ErrHelp
	default:
		return usagef("unknown command %q", cmd)
	}
	pos, err := parse(fs, args)
	if err != nil {
		return err
	}
	switch cmd {
	case "ls", "leaks":
		if len(pos) > 1 {
			return usagef("%s takes at most one pattern, got %d arguments", cmd, len(pos))
		}
	default:
		if len(pos) != 1 || pos[0] == "" {
			return usagef("%s takes one NAME", cmd)
		}
		if cmd == "unlock" && !force {
			return usagef("unlock needs --force: it releases the lock whoever holds it")
		}
	}
	pattern := "*"
	if len(pos) == 1 {
		pattern = pos[0]
	}

	client, err := c.client(a.getenv)
	if err != nil {
		return err
	}
	defer client.Close()
	if c.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	in := inspect.New(client)
	switch cmd {
	case "ls":
		return a.ls(ctx, in, pattern, c.json)
	case "show":
		return a.show(ctx, in, pos[0], c.json)
	case "leaks":
		return a.leaks(ctx, in, pattern, c.json)
	default:
		return a.unlock(ctx, in, pos[0], yes, c.json)
	}
}

func (a *App) getenv(k string) string {
	if a.Getenv == nil {
		return ""
	}
	return a.Getenv(k)
}

// client builds the Redis client: --addr, else REDIS_URL, else the
// default address; a ClusterClient with --cluster.
func (c *common) client(getenv func(string) string) (redis.UniversalClient, error) {
	addr, url := c.addr, ""
	if addr == "" {
		url = getenv("REDIS_URL")
		if url == "" {
			addr = DefaultAddr
		}
	}
	if c.cluster.seeds != "" {
		addr, url = c.cluster.seeds, ""
	}
	if c.cluster.on {
		var opt *redis.ClusterOptions
		if url != "" {
			var err error
			if opt, err = redis.ParseClusterURL(url); err != nil {
				return nil, usagef("REDIS_URL: %v", err)
			}
		} else {
			opt = &redis.ClusterOptions{}
			for _, s := range strings.Split(addr, ",") {
				if s = strings.TrimSpace(s); s != "" {
					opt.Addrs = append(opt.Addrs, s)
				}
			}
			if len(opt.Addrs) == 0 {
				return nil, usagef("--addr: no address")
			}
		}
		opt.ContextTimeoutEnabled = true
		return redis.NewClusterClient(opt), nil
	}
	var opt *redis.Options
	if url != "" {
		var err error
		if opt, err = redis.ParseURL(url); err != nil {
			return nil, usagef("REDIS_URL: %v", err)
		}
	} else {
		if strings.Contains(addr, ",") {
			return nil, usagef("--addr %q: several addresses need --cluster", addr)
		}
		opt = &redis.Options{Addr: addr}
	}
	opt.ContextTimeoutEnabled = true
	return redis.NewClient(opt), nil
}
