package scripts

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/telemetry"
	"github.com/relock-go/relock/tracing"
)

// ErrReplicaDenied is the cause of an error that replica sync cannot keep its
// promise because this Redis user may not run a command it needs (INFO
// and ROLE to count the replicas, WAIT to wait for them). The error names
// the permission to grant; the Redis reply (NOPERM) is wrapped too.
var ErrReplicaDenied = errors.New("replica sync refused by the server's ACL")

// denied reports whether err is Redis's refusal of a command by the
// user's ACL (NOPERM), as opposed to a command the server does not know
// (miniredis, some proxies), which means it has no replicas to count.
func denied(err error) bool {
	msg, ok := conn.ReplyText(err)
	return ok && strings.HasPrefix(msg, "NOPERM")
}

// permErr is ErrReplicaDenied, explained, with the server's reply.
type permErr struct {
	msg   string
	reply error
}

func (e *permErr) Error() string   { return e.msg + ": " + e.reply.Error() }
func (e *permErr) Unwrap() []error { return []error{ErrReplicaDenied, e.reply} }

// countDenied is the error of a call whose server refused both INFO and
// ROLE to this user.
func countDenied(reply error) error {
	return &permErr{reply: reply, msg: "replica sync: this Redis user may not run INFO or ROLE, " +
		"which count the server's replicas: grant +info (or +role), or turn replica sync off with WithReplicaSync(0)"}
}

// waitErr is the error of a WAIT that got an error reply: NOPERM names
// the permission; any other error is reported as it is.
func waitErr(err error) error {
	if !conn.IsReply(err) {
		return nil // lost on the network: counted as not acknowledged
	}
	if denied(err) {
		return &permErr{reply: err, msg: "replica sync: this Redis user may not run WAIT, " +
			"which waits for the replicas to acknowledge an acquisition: grant +wait, or turn replica sync off with WithReplicaSync(0)"}
	}
	return fmt.Errorf("replica sync: WAIT failed: %w", err)
}

// warned holds "address\x00reason" of each warning given: once per
// server and reason in the process, however many clients reach it.
var warned sync.Map

// warn logs (to log, or slog.Default() when nil) and counts a warning
// about the server at addr, the first time only.
func warn(log *slog.Logger, addr, reason, msg string, attrs ...any) {
	if _, dup := warned.LoadOrStore(addr+"\x00"+reason, true); dup {
		return
	}
	ctx := context.Background()
	if log == nil {
		log = slog.Default()
	}
	log.Warn(msg, append([]any{slog.String("server", addr), slog.String("reason", reason)}, attrs...)...)
	telemetry.ServerWarning(ctx, nil, addr, reason)
}

// checkMemory warns when the server's eviction policy, read from an
// INFO memory reply (if it came), may evict a lock's keys: with
// maxmemory set, allkeys-* evicts any key and volatile-* any key with a
// TTL, which every key of a lock has. An evicted lock is free to the
// next owner while its holder is still working.
func checkMemory(addr string, info conn.Reply, log *slog.Logger) {
	r, err := info.Text()
	if err != nil {
		return // refused or unknown: nothing said either way
	}
	max, policy := parseMemory(r)
	if max > 0 && evicts(policy) {
		warn(log, addr, tracing.WarningEviction,
			"relock: this Redis server may evict lock keys under memory pressure, and an evicted lock goes to a second owner "+
				"while its holder still works; set maxmemory-policy noeviction, or keep locks on an instance of their own",
			slog.Int64("maxmemory", max), slog.String("maxmemory_policy", policy))
	}
}

// evicts reports whether a maxmemory-policy may evict a key with a TTL.
func evicts(policy string) bool {
	return strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-")
}

// parseMemory reads maxmemory and maxmemory_policy from an INFO memory
// reply.
func parseMemory(info string) (maxmemory int64, policy string) {
	for line := range strings.Lines(info) {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok {
			continue
		}
		switch k {
		case "maxmemory":
			maxmemory, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory_policy":
			policy = v
		}
	}
	return maxmemory, policy
}
