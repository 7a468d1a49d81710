package doctor

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Severity grades a finding: OK, Info, Warn or Error.
type Severity int

// The severities, from the mildest.
const (
	OK    Severity = iota // the setting keeps relock's guarantees
	Info                  // worth knowing; nothing to fix
	Warn                  // a guarantee is weakened in some failure, or could not be checked
	Error                 // a guarantee is broken, or relock cannot work
)

var severityNames = [...]string{"ok", "info", "warn", "error"}

// String is the severity's name: ok, info, warn or error.
func (s Severity) String() string {
	if s < OK || s > Error {
		return fmt.Sprintf("severity(%d)", int(s))
	}
	return severityNames[s]
}

// MarshalText writes the severity by its name, for the JSON output.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads a severity by its name.
func (s *Severity) UnmarshalText(b []byte) error {
	i := slices.Index(severityNames[:], string(b))
	if i < 0 {
		return fmt.Errorf("doctor: unknown severity %q", b)
	}
	*s = Severity(i)
	return nil
}

// Finding is one thing the doctor found on one server.
type Finding struct {
	// Node is the server's address, or the Sentinel or cluster the
	// finding is about.
	Node string `json:"node"`
	// Check names what was checked: connection, sentinel, cluster,
	// version, eviction, memory, persistence, replicas, clock or acl.
	Check    string   `json:"check"`
	Severity Severity `json:"severity"`
	Message  string   `json:"message"`
	// Fix says what to change; empty when nothing needs to.
	Fix string `json:"fix,omitempty"`
}

// Report is what the doctor found, in the order it checked.
type Report struct {
	Worst    Severity  `json:"worst"`
	Findings []Finding `json:"findings"`
}

func (r *Report) add(fs ...Finding) {
	for _, f := range fs {
		r.Worst = max(r.Worst, f.Severity)
		r.Findings = append(r.Findings, f)
	}
}

// WriteJSON writes the report as an indented JSON document.
func (r Report) WriteJSON(w io.Writer) error {
	if r.Findings == nil {
		r.Findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the findings grouped by node, each with its severity
// and fix, then a count by severity.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	node := "\x00"
	var count [Error + 1]int
	for _, f := range r.Findings {
		if f.Node != node {
			if node != "\x00" {
				b.WriteByte('\n')
			}
			node = f.Node
			fmt.Fprintf(&b, "== %s\n", node)
		}
		count[f.Severity]++
		tag := "[" + f.Severity.String() + "]"
		fmt.Fprintf(&b, "%-7s %s: %s\n", tag, f.Check, f.Message)
		if f.Fix != "" {
			fmt.Fprintf(&b, "        fix: %s\n", f.Fix)
		}
	}
	fmt.Fprintf(&b, "\n%d error, %d warn, %d info, %d ok\n", count[Error], count[Warn], count[Info], count[OK])
	_, err := io.WriteString(w, b.String())
	return err
}

// DefaultSkew is the clock difference above which the doctor warns.
const DefaultSkew = 500 * time.Millisecond

// DefaultName is the lock name the ACL check tries keys and channels with.
const DefaultName = "relock-doctor"

// Config tunes the checks; the zero value uses the defaults.
type Config struct {
	// Skew is the largest difference between a server's clock and this
	// machine's that is not reported (default DefaultSkew).
	Skew time.Duration
	// ACLUser is the user whose permissions are checked; empty: the
	// connection's own user (ACL WHOAMI).
	ACLUser string
	// Name is a lock name whose keys and channels the ACL check tries
	// against the user's key and channel patterns (default DefaultName).
	Name string
	// Now reads this machine's clock (default time.Now).
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.Skew <= 0 {
		c.Skew = DefaultSkew
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// role is what a node is expected to be.
type role int

const (
	anyRole     role = iota // a server given alone: a replica is a mistake
	masterRole              // a Sentinel's master or a cluster's master
	replicaRole             // a Sentinel's replica
)

// CheckServer checks the one server c talks to.
func CheckServer(ctx context.Context, c *redis.Client, cfg Config) Report {
	var r Report
	r.add(checkNode(ctx, c, anyRole, false, cfg.withDefaults())...)
	return r
}

// CheckCluster checks every master of the cluster cc talks to.
func CheckCluster(ctx context.Context, cc *redis.ClusterClient, cfg Config) Report {
	cfg = cfg.withDefaults()
	var r Report
	var mu sync.Mutex
	var nodes [][]Finding
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		fs := checkNode(ctx, c, masterRole, true, cfg)
		mu.Lock()
		nodes = append(nodes, fs)
		mu.Unlock()
		return nil
	})
	if err != nil {
		r.add(Finding{Node: "cluster", Check: "cluster", Severity: Error,
			Message: fmt.Sprintf("could not reach every master: %v", err),
			Fix:     "check the seed addresses and that every master answers"})
	} else {
		r.add(Finding{Node: "cluster", Check: "cluster", Severity: Info,
			Message: fmt.Sprintf("%d masters; relock needs a ClusterClient (redis.NewClusterClient) here", len(nodes))})
	}
	// The masters answer in any order; sort them so that the output is stable.
	slices.SortFunc(nodes, func(a, b []Finding) int { return cmp.Compare(a[0].Node, b[0].Node) })
	for _, fs := range nodes {
		r.add(fs...)
	}
	return r
}

// CheckSentinel asks the Sentinels (the first that answers) for master's
// address and replicas, and checks each of those servers, dialled with
// node's options (its Addr is replaced).
func CheckSentinel(ctx context.Context, sentinels []string, master string, node redis.Options, cfg Config) Report {
	cfg = cfg.withDefaults()
	var r Report
	addr, replicas, fs := resolveSentinel(ctx, sentinels, master)
	r.add(fs...)
	if addr == "" {
		return r
	}
	dial := func(a string) *redis.Client {
		o := node
		o.Addr = a
		o.ContextTimeoutEnabled = true
		return redis.NewClient(&o)
	}
	c := dial(addr)
	r.add(checkNode(ctx, c, masterRole, false, cfg)...)
	_ = c.Close()
	for _, a := range replicas {
		c := dial(a)
		r.add(checkNode(ctx, c, replicaRole, false, cfg)...)
		_ = c.Close()
	}
	return r
}

// resolveSentinel returns the master's address and its replicas' as the
// first Sentinel that answers names them, with a finding about the
// Sentinels; addr is "" when none answered.
func resolveSentinel(ctx context.Context, sentinels []string, master string) (addr string, replicas []string, fs []Finding) {
	node := strings.Join(sentinels, ",")
	var errs []string
	for _, s := range sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s, ContextTimeoutEnabled: true, MaxRetries: -1})
		m, err := sc.Master(ctx, master).Result()
		var rs []map[string]string
		if err == nil {
			rs, err = sc.Replicas(ctx, master).Result()
		}
		_ = sc.Close()
		if err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", s, err))
			continue
		}
		addr = m["ip"] + ":" + m["port"]
		var down []string
		for _, r := range rs {
			a := r["ip"] + ":" + r["port"]
			if strings.Contains(r["flags"], "down") || strings.Contains(r["flags"], "disconnected") {
				down = append(down, a+" ("+r["flags"]+")")
				continue
			}
			replicas = append(replicas, a)
		}
		fs = append(fs, Finding{Node: node, Check: "sentinel", Severity: Info,
			Message: fmt.Sprintf("%s names master %q at %s (flags %s, quorum %s, %s other sentinels) with %d replicas",
				s, master, addr, m["flags"], m["quorum"], m["num-other-sentinels"], len(rs))})
		if len(down) > 0 {
			fs = append(fs, Finding{Node: node, Check: "sentinel", Severity: Warn,
				Message: "replicas down or disconnected, not checked: " + strings.Join(down, ", "),
				Fix:     "bring them back: a failover can only pick a replica that is up and in sync"})
		}
		return addr, replicas, fs
	}
	fs = append(fs, Finding{Node: node, Check: "sentinel", Severity: Error,
		Message: fmt.Sprintf("no Sentinel named the master %q: %s", master, strings.Join(errs, "; ")),
		Fix:     "check the --sentinel addresses and the --master name (SENTINEL MASTERS lists the names)"})
	return "", nil, fs
}
