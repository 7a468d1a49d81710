package scripts

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/errs"

	"github.com/relock-go/relock/tracing"
)

// ReplicaPolicy is how an acquisition's write is acknowledged by replicas.
type ReplicaPolicy struct {
	// Timeout bounds the WAIT; 0 turns replica sync off.
	Timeout time.Duration
	// Min is how many replicas must acknowledge (at least 1).
	Min int
	// Logger receives warnings about the server; nil: slog.Default().
	Logger *slog.Logger
}

// Acks is what the WAIT of one call answered.
type Acks struct {
	Want    int           // replicas the WAIT waited for; 0: no WAIT was sent
	Got     int           // replicas that acknowledged
	Timeout time.Duration // the WAIT's
	// Err is why the WAIT's answer does not count (a NOPERM names the grant).
	Err error
}

// Enough reports whether a satisfies p: no WAIT was sent, or Min acked.
func (p ReplicaPolicy) Enough(a Acks) bool { return a.Want == 0 || a.Got >= p.Min }

// Err is the error of a write too few replicas acknowledged: it matches
// ErrNotReplicated and ErrNotAcquired.
func (p ReplicaPolicy) Err(a Acks) error {
	if a.Err != nil {
		return a.Err
	}
	return fmt.Errorf("%w: %d of %d replicas acknowledged within %v, %d required",
		errs.ErrNotReplicated, a.Got, a.Want, cmp.Or(a.Timeout, p.Timeout), p.Min)
}

// Refuse gives back an under-acknowledged acquisition (undo) and returns
// Err(a), or undo's failure (the lost-reply give-back then takes over).
func (p ReplicaPolicy) Refuse(a Acks, undo func() error) error {
	if err := undo(); err != nil {
		return fmt.Errorf("%d of %d replicas acknowledged, and giving the acquisition back failed: %w", a.Got, a.Want, err)
	}
	return p.Err(a)
}

// refreshEvery is how long a server's replica count is trusted before the
// next call's round trip reads it again (a variable for the tests).
var refreshEvery = 10 * time.Second

// movedRetries bounds resends after MOVED or ASK (the script did not run).
const movedRetries = 3

// Synced sends the call (Run is Synced with no policy), its first key in
// the slot it writes. When p is on and that slot's server has replicas
// online, WAIT <min(replicas, p.Min)> <p.Timeout> follows in the same round
// trip (ending before ctx's deadline), and Acks says what it answered. A
// server with no replica gets the script alone, unless the client has seen
// a replica (or is a Sentinel client): then nothing runs
// (ErrNotReplicated). Counts are read again every 10 s, after a
// failover-like error and a short WAIT. The script alone is sent here, not
// by a callee, so that the common call is no deeper than it must be.
func (call Call) Synced(ctx context.Context, c conn.Client, p ReplicaPolicy) (conn.Reply, Acks) {
	var srv *server // the server whose count let the script go alone
	if p.Timeout > 0 {
		var cmd conn.Reply
		var acks Acks
		var sent bool
		if cmd, acks, sent, srv = call.replicated(ctx, c, p); sent {
			return cmd, acks
		}
	}
	cmd := call.Cmd(ctx)
	if IsNoScript(conn.PipeFor(c).Process(ctx, cmd)) {
		cmd = call.s.Reload(ctx, cmd)
		c.Process(ctx, cmd)
	}
	if named := call.s.named(cmd.Reply().Err(), call.a); named != nil {
		cmd.SetErr(named)
	}
	err := cmd.Reply().Err()
	Unreachable(ctx, c, err)
	if srv != nil && err != nil && conn.Transient(err) {
		srv.stale()
	}
	return cmd.Reply(), Acks{}
}

// replicated sends the call with a WAIT when p needs one, and says so
// (sent); else the script goes alone, on the word of the server returned
// (nil: of none).
func (call Call) replicated(ctx context.Context, c conn.Client, p ReplicaPolicy) (conn.Reply, Acks, bool, *server) {
	if dl, ok := ctx.Deadline(); ok {
		// A WAIT cut by the deadline would leave the acquisition unknown.
		p.Timeout = max(min(p.Timeout, time.Until(dl)*3/4), time.Millisecond).Truncate(time.Millisecond)
	}
	var key string
	if call.nkeys > 0 {
		key, _ = call.a[3].(string)
	}
	for retry := 0; ; retry++ {
		node, srv, err := route(ctx, c, key)
		if errors.Is(err, errUnsupported) {
			return conn.Reply{}, Acks{}, false, nil
		}
		if err != nil {
			return conn.Failed(ctx, err), Acks{}, true, nil
		}
		n, refresh, err := srv.count(ctx, node, p.Logger)
		if err != nil {
			Unreachable(ctx, c, err)
			return conn.Failed(ctx, err), Acks{}, true, nil
		}
		if n == 0 && srv.replicated.Load() {
			return conn.Failed(ctx, srv.refuse(node, p)), Acks{}, true, nil
		}
		if n == 0 && !refresh {
			return conn.Reply{}, Acks{}, false, srv
		}
		cmd, acks := srv.send(ctx, node, p, call, n, refresh)
		if err := cmd.Err(); err != nil {
			Unreachable(ctx, c, err)
			if redirected(err) && retry < movedRetries {
				c.Refresh(ctx)
				if clock.Sleep(ctx, time.Duration(retry+1)*20*time.Millisecond) {
					continue
				}
			}
			return cmd, acks, true, nil
		}
		if acks.Want > 0 {
			if span := trace.SpanFromContext(ctx); span.IsRecording() {
				span.SetAttributes(tracing.ReplicasAcked.Int(acks.Got))
			}
		}
		return cmd, acks, true, nil
	}
}

// SyncNeeded reports whether a write of key under p may need a WAIT (the
// server has replicas, or may have); it sends nothing. A write that cannot
// be synced (a lock handed over inside a release) is made another way.
func SyncNeeded(ctx context.Context, c conn.Client, p ReplicaPolicy, key string) bool {
	if p.Timeout <= 0 {
		return false
	}
	_, srv, err := route(ctx, c, key)
	if errors.Is(err, errUnsupported) {
		return false
	}
	return err != nil || srv.n.Load() != 0 || srv.replicated.Load()
}

// send runs the script and, for n > 0 replicas, WAIT for min(n, p.Min) on
// one pipeline of node; refresh adds INFO to read the count anew.
func (srv *server) send(ctx context.Context, node conn.Client, p ReplicaPolicy, call Call, n int, refresh bool) (conn.Reply, Acks) {
	n = min(n, max(p.Min, 1))
	cmd := call.Cmd(ctx)
	wait, info := pipeline(ctx, node, cmd, p, n, refresh)
	if IsNoScript(cmd.Reply().Err()) {
		// Not cached (a restart, a failover): EVAL loads it, WAIT follows.
		cmd = call.s.Reload(ctx, cmd)
		wait, info = pipeline(ctx, node, cmd, p, n, refresh)
	}
	if refresh {
		if r, err := info[0].Text(); err == nil {
			srv.set(parseReplicas(r))
			checkMemory(node.Addr(), info[1], p.Logger)
		} else {
			srv.stale() // the next call asks again (ROLE where INFO is refused)
		}
	}
	if err := cmd.Reply().Err(); err != nil {
		if named := call.s.named(err, cmd.Args()); named != nil {
			cmd.SetErr(named)
			err = named
		}
		if conn.Transient(err) || redirected(err) {
			srv.stale()
		}
		return cmd.Reply(), Acks{}
	}
	return cmd.Reply(), srv.acks(wait, n, p.Timeout)
}

// acks reads the reply of a WAIT for want replicas within timeout (zero:
// none was sent). An error or a short count has the count read anew.
func (srv *server) acks(wait conn.Cmd, want int, timeout time.Duration) Acks {
	a := Acks{Want: want, Timeout: timeout}
	if wait.Zero() {
		return a
	}
	got, err := wait.Reply().Int64() // 0 on an error
	if a.Got, a.Err = int(got), waitErr(err); err != nil || a.Got < want {
		srv.stale()
	}
	return a
}

func pipeline(ctx context.Context, node conn.Client, cmd conn.Cmd, p ReplicaPolicy, n int, refresh bool) (wait conn.Cmd, info []conn.Reply) {
	cmds := []conn.Cmd{cmd}
	if n > 0 {
		wait = waitCmd(ctx, n, p.Timeout)
		cmds = append(cmds, wait)
	}
	if refresh {
		repl, mem := infoCmds(ctx)
		cmds = append(cmds, repl, mem)
		info = []conn.Reply{repl.Reply(), mem.Reply()}
	}
	node.Exec(ctx, cmds...)
	return wait, info
}

// waitCmd is WAIT for n replicas within timeout (at least 1 ms: 0 blocks).
func waitCmd(ctx context.Context, n int, timeout time.Duration) conn.Cmd {
	return conn.NewCmd(ctx, 0, "wait", n, max(timeout.Milliseconds(), 1))
}

// infoCmds are INFO replication and INFO memory, sent apart: Redis 6
// refuses two sections in one.
func infoCmds(ctx context.Context) (repl, mem conn.Cmd) {
	return conn.NewCmd(ctx, 0, "info", "replication"), conn.NewCmd(ctx, 0, "info", "memory")
}

var errUnsupported = errors.New("replica sync: client type not supported")

// servers holds the replica counts of each client's servers.
var servers = conn.NewPerClient(newTopology)

type topology struct {
	single server   // a *redis.Client's one server
	nodes  sync.Map // a cluster's: node address -> *server
	// replicated: a replica was seen online, or the client is Sentinel's;
	// a master without one then refuses synced writes (see refuse).
	replicated atomic.Bool
}

func newTopology(c conn.Client) *topology {
	t := &topology{}
	t.single.n.Store(unknown)
	t.single.replicated = &t.replicated
	// Sentinel has replicas by design, even before one is back from a failover.
	if c.Sentinel() {
		t.replicated.Store(true)
	}
	return t
}

// route returns the client of key's server, and that server's state.
func route(ctx context.Context, c conn.Client, key string) (conn.Client, *server, error) {
	node, err := c.Node(ctx, key)
	switch {
	case errors.Is(err, conn.ErrNoNode):
		return conn.Client{}, nil, errUnsupported
	case err != nil:
		return conn.Client{}, nil, err
	case !c.Cluster():
		return node, &servers.For(c).single, nil
	}
	t := servers.For(c)
	addr := node.Addr()
	if v, ok := t.nodes.Load(addr); ok {
		return node, v.(*server), nil
	}
	srv := &server{replicated: &t.replicated, cluster: true}
	srv.n.Store(unknown)
	v, _ := t.nodes.LoadOrStore(addr, srv)
	return node, v.(*server), nil
}

// unknown is the count of a server not asked yet, or whose count is stale.
const unknown = -1

// pendingEvery is how long a count is trusted while a replica is still
// syncing, so that it is waited for soon after it comes online.
const pendingEvery = 250 * time.Millisecond

// server is what is known of one server's replicas.
type server struct {
	n          atomic.Int64 // online replicas, or unknown
	pending    atomic.Bool  // a replica is connected but not yet online
	checked    atomic.Int64 // when n was read (unix ns)
	refreshing atomic.Bool  // a call carries an INFO to read n anew
	replicated *atomic.Bool // its topology's
	// cluster: a cluster's node; its count also reads CLUSTER NODES.
	cluster bool
}

// count returns the server's replica count, asking when it is unknown;
// refresh tells the caller to carry an INFO in its round trip.
func (srv *server) count(ctx context.Context, node conn.Client, log *slog.Logger) (n int, refresh bool, err error) {
	if v := srv.n.Load(); v != unknown {
		trust := refreshEvery
		if srv.pending.Load() {
			trust = min(trust, pendingEvery)
		}
		due := time.Since(time.Unix(0, srv.checked.Load())) > trust
		return int(v), due && srv.refreshing.CompareAndSwap(false, true), nil
	}
	c, err := ask(ctx, node, log, srv.cluster)
	if err != nil {
		return 0, false, err
	}
	srv.set(c)
	return c.online, false, nil
}

// replicas is what a server said of its replicas.
type replicas struct {
	online  int  // those a WAIT can count on
	pending bool // one more is connected but still syncing
	// listed: the cluster lists a replica, online or not.
	listed bool
}

// ask reads the online replicas from INFO replication (ROLE where refused),
// the eviction policy from INFO memory, and on a cluster CLUSTER NODES (a
// replica not yet back from a failover still counts). A server that knows
// neither command (miniredis) has no replicas; a user refused both gets an
// error, so that the sync is never quietly off.
func ask(ctx context.Context, node conn.Client, log *slog.Logger, cluster bool) (replicas, error) {
	repl, mem := infoCmds(ctx)
	cmds := []conn.Cmd{repl, mem}
	if cluster {
		cmds = append(cmds, conn.NewCmd(ctx, 0, "cluster", "nodes"))
	}
	node.Exec(ctx, cmds...)
	r, err := repl.Reply().Text()
	if err == nil {
		checkMemory(node.Addr(), mem.Reply(), log)
		c := parseReplicas(r)
		c.listed = cluster && listsReplica(cmds[2].Reply())
		return c, nil
	}
	if !conn.IsReply(err) {
		return replicas{}, err
	}
	infoErr := err
	role, err := node.Do(ctx, "role").Slice()
	if err != nil {
		if !conn.IsReply(err) {
			return replicas{}, err
		}
		if denied(infoErr) && denied(err) {
			return replicas{}, countDenied(err)
		}
		return replicas{}, nil
	}
	return replicas{online: parseRole(role)}, nil
}

// parseRole counts the replicas in a master's ROLE reply: "master",
// offset, then one [ip, port, offset] per connected replica.
func parseRole(role []any) int {
	if len(role) < 3 || role[0] != "master" {
		return 0
	}
	replicas, _ := role[2].([]any)
	return len(replicas)
}

func (srv *server) set(r replicas) {
	if r.online > 0 || r.listed {
		srv.replicated.Store(true) // not for a syncing replica: it may never come online
	}
	srv.checked.Store(time.Now().UnixNano())
	srv.pending.Store(r.pending)
	srv.n.Store(int64(r.online))
	srv.refreshing.Store(false)
}

// refuse is the error of a synced write to a replica-less master of a
// replicated deployment: it may be the side of a split thrown away.
func (srv *server) refuse(node conn.Client, p ReplicaPolicy) error {
	srv.stale()
	warn(p.Logger, node.Addr(), "no-replica", "relock: replica sync: a master of a replicated deployment has no replica online; acquisitions there are refused until one is (WithReplicaSync(0) turns the sync off)")
	return fmt.Errorf("%w: the server has no replica online, %d required (replicas were seen on this deployment)", errs.ErrNotReplicated, max(p.Min, 1))
}

func (srv *server) stale() {
	srv.n.Store(unknown)
	srv.refreshing.Store(false)
}

// parseReplicas counts the online replicas in INFO replication and tells
// whether another is still syncing; a replica itself has none to wait for.
func parseReplicas(info string) replicas {
	var r replicas
	connected := 0
	for line := range strings.Lines(info) {
		line = strings.TrimSpace(line)
		if line == "role:slave" {
			return replicas{}
		}
		if v, ok := strings.CutPrefix(line, "connected_slaves:"); ok {
			connected, _ = strconv.Atoi(v)
			continue
		}
		if !strings.HasPrefix(line, "slave") || !strings.Contains(line, ":ip=") {
			continue
		}
		if strings.Contains(line, ",state=online,") {
			r.online++
		} else {
			r.pending = true
		}
	}
	r.pending = r.pending || connected > r.online
	return r
}

// listsReplica reports whether a CLUSTER NODES reply lists a replica
// (flags, the third field, include "slave"); a failed one lists none.
func listsReplica(reply conn.Reply) bool {
	text, err := reply.Text()
	if err != nil {
		return false
	}
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) > 2 && slices.Contains(strings.Split(f[2], ","), "slave") {
			return true
		}
	}
	return false
}

// redirected reports a MOVED or ASK reply: the script did not run.
func redirected(err error) bool {
	_, ok := conn.Redirect(err)
	return ok
}
