package cli

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
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

func (a *App) printJSON(v any) error {
	enc := json.NewEncoder(a.Stdout)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

func (a *App) id(s string) string {
	if a.ID == nil {
		return s
	}
	return a.ID(s)
}

// ttl formats a TTL or lease in ms: "none" without TTL, "expired" at or
// below 0.
func (a *App) ttl(ms int64) string {
	switch {
	case ms == inspect.NoTTL:
		return "none"
	case ms <= 0:
		return "expired"
	case a.TTL != nil:
		return a.TTL(ms)
	}
	return FormatTTL(ms)
}

// FormatTTL formats a positive duration in ms: to the millisecond below a
// second, to 0.1 s below a minute, to the second above.
func FormatTTL(ms int64) string {
	d := time.Duration(ms) * time.Millisecond
	switch {
	case d < time.Second:
		return d.String()
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}

func state(e inspect.Entry) string {
	switch e.Kind {
	case inspect.KindRWLock:
		return *e.Mode
	case inspect.KindSemaphore:
		return fmt.Sprintf("%d/%d used", *e.Used, *e.Size)
	}
	return "held"
}

func optInt(p *int64) string {
	if p == nil {
		return "-"
	}
	return strconv.FormatInt(*p, 10)
}

func newTable(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 8, 2, ' ', 0) }

func (a *App) ls(ctx context.Context, in *inspect.Inspector, pattern string, asJSON bool) error {
	es, err := in.List(ctx, pattern)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(es)
	}
	if len(es) == 0 {
		fmt.Fprintf(a.Stdout, "no locks, rwlocks or semaphores match %q\n", pattern)
		return nil
	}
	tw := newTable(a.Stdout)
	fmt.Fprintln(tw, "NAME\tKIND\tSTATE\tTTL\tTOKEN\tWAITERS\tHOLDER\tSIDE\tCOUNT\tLEASE\tLABEL")
	for _, e := range es {
		head := fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%d", e.Name, e.Kind, state(e), a.ttl(e.TTLMs), optInt(e.FencingToken), len(e.Waiters))
		if len(e.Holders) == 0 {
			fmt.Fprintf(tw, "%s\t-\t\t\t\n", head)
		}
		for i, h := range e.Holders {
			if i > 0 {
				head = "\t\t\t\t\t"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\n", head, a.id(h.ID), h.Side, h.Count, a.ttl(h.LeaseMs), orDash(h.Label))
		}
	}
	return tw.Flush()
}

func (a *App) show(ctx context.Context, in *inspect.Inspector, name string, asJSON bool) error {
	d, err := in.Show(ctx, name)
	if err != nil {
		return err
	}
	if asJSON {
		return a.printJSON(d)
	}
	tw := newTable(a.Stdout)
	fmt.Fprintf(tw, "name:\t%s\n", d.Name)
	fmt.Fprintf(tw, "kind:\t%s\n", d.Kind)
	fmt.Fprintf(tw, "state:\t%s\n", state(d.Entry))
	fmt.Fprintf(tw, "ttl:\t%s\n", a.ttl(d.TTLMs))
	if d.Kind != inspect.KindSemaphore {
		fmt.Fprintf(tw, "fencing token:\t%s\n", optInt(d.FencingToken))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(a.Stdout, "\nholders (%d):\n", len(d.Holders))
	if len(d.Holders) > 0 {
		tw = newTable(a.Stdout)
		fmt.Fprintln(tw, "  HOLDER\tSIDE\tCOUNT\tLEASE\tLABEL")
		for _, h := range d.Holders {
			lease := a.ttl(h.LeaseMs)
			if h.Expired {
				lease = "expired (dead owner)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%d\t%s\t%s\n", a.id(h.ID), h.Side, h.Count, lease, orDash(h.Label))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.Stdout, "\nwaiters (%d):\n", len(d.Waiters))
	if len(d.Waiters) > 0 {
		tw = newTable(a.Stdout)
		fmt.Fprintln(tw, "  WAITER\tMARK")
		for _, w := range d.Waiters {
			fmt.Fprintf(tw, "  %s\t%s\n", a.id(w.ID), a.ttl(w.MarkMs))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(a.Stdout, "\nkeys (%d):\n", len(d.Keys))
	tw = newTable(a.Stdout)
	fmt.Fprintln(tw, "  KEY\tTYPE\tTTL")
	for _, k := range d.Keys {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", a.id(k.Key), k.Type, a.ttl(k.TTLMs))
	}
	return tw.Flush()
}

func (a *App) leaks(ctx context.Context, in *inspect.Inspector, pattern string, asJSON bool) error {
	rep, err := in.Leaks(ctx, pattern)
	if err != nil {
		return err
	}
	if asJSON {
		if err := a.printJSON(rep); err != nil {
			return err
		}
	} else {
		if len(rep.Findings) == 0 {
			fmt.Fprintln(a.Stdout, "no leaks found")
		} else {
			tw := newTable(a.Stdout)
			fmt.Fprintln(tw, "KEY\tPROBLEM\tHOLDER\tDETAIL")
			for _, f := range rep.Findings {
				h := f.Holder
				if h == "" {
					h = "-"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.id(f.Key), f.Problem, a.id(h), f.Detail)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(a.Stdout, "%d leak(s) found\n", len(rep.Findings))
		}
		fmt.Fprintf(a.Stdout, "%d key(s) of ours checked; each must expire within %g h\n", rep.Keys, inspect.MaxTTL.Hours())
	}
	if len(rep.Findings) > 0 {
		return errLeaks
	}
	return nil
}

// orDash is s, or "-" when it is empty.
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// holdersText lists e's holders for the confirmation prompt.
func (a *App) holdersText(e inspect.Entry) string {
	if len(e.Holders) == 0 {
		return "nobody"
	}
	parts := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		parts[i] = fmt.Sprintf("%s (%s x%d)", a.id(h.ID), h.Side, h.Count)
	}
	return strings.Join(parts, ", ")
}

// unlockResult is unlock's JSON output.
type unlockResult struct {
	Name     string   `json:"name"`
	Kind     string   `json:"kind"`
	Released bool     `json:"released"`
	Channel  string   `json:"channel"`
	Holders  []string `json:"holders"`
}

func (a *App) unlock(ctx context.Context, in *inspect.Inspector, name string, yes, asJSON bool) error {
	e, err := in.Get(ctx, name)
	if err != nil {
		return err
	}
	if !yes {
		if !a.Interactive {
			return fmt.Errorf("refusing to force-unlock %s %q without --yes: stdin is not a terminal", e.Kind, name)
		}
		fmt.Fprintf(a.Stderr, "Force-unlock %s %q held by %s? [y/N] ", e.Kind, name, a.holdersText(e))
		line, err := bufio.NewReader(a.Stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read confirmation: %w", err)
		}
		switch strings.ToLower(strings.TrimSpace(line)) {
		case "y", "yes":
		default:
			return fmt.Errorf("not confirmed: %s %q left as it is", e.Kind, name)
		}
	}
	released, err := in.ForceUnlock(ctx, e)
	if err != nil {
		return err
	}
	ch := inspect.Channel(e)
	if asJSON {
		r := unlockResult{Name: name, Kind: e.Kind, Released: released, Channel: ch, Holders: []string{}}
		for _, h := range e.Holders {
			r.Holders = append(r.Holders, h.ID)
		}
		return a.printJSON(r)
	}
	if !released {
		fmt.Fprintf(a.Stdout, "%s %q was already released\n", e.Kind, name)
		return nil
	}
	what := "deleted"
	if e.Kind == inspect.KindSemaphore {
		what = "permits deleted, size record kept"
	}
	fmt.Fprintf(a.Stdout, "force-unlocked %s %q (%s; waiters woken on %s)\n", e.Kind, name, what, ch)
	return nil
}
