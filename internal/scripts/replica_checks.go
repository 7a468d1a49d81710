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

// ErrReplicaDenied is the cause when this Redis user may not run a command
// replica sync needs (INFO and ROLE, or WAIT). The error names the
// permission to grant and wraps the NOPERM reply.
var ErrReplicaDenied = errors.New("replica sync refused by the server's ACL")

// denied reports whether err is an ACL refusal (NOPERM), not a command
// the server does not know (miniredis: no replicas to count).
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

// countDenied is the error when the user is refused both INFO and ROLE.
func countDenied(reply error) error {
	return &permErr{reply: reply, msg: "replica sync: this Redis user may not run INFO or ROLE, " +
		"which count the server's replicas: grant +info (or +role), or turn replica sync off with WithReplicaSync(0)"}
}

// waitErr is the error of a WAIT's error reply (nil if none came); NOPERM
// names the permission.
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

// warned holds "address\x00reason" of each warning given, once per process.
var warned sync.Map

// warn logs (to log, or slog.Default()) and counts a warning about the
// server at addr, the first time only.
func warn(log *slog.Logger, addr, reason, msg string, attrs ...any) {
	if _, dup := warned.LoadOrStore(addr+"\x00"+reason, true); dup {
		return
	}
	if log == nil {
		log = slog.Default()
	}
	log.Warn(msg, append([]any{slog.String("server", addr), slog.String("reason", reason)}, attrs...)...)
	telemetry.ServerWarning(context.Background(), nil, addr, reason)
}

// checkMemory warns when an INFO memory reply shows maxmemory with an
// allkeys-* or volatile-* policy: every key of a lock has a TTL, and an
// evicted lock goes to a next owner while its holder still works.
func checkMemory(addr string, info conn.Reply, log *slog.Logger) {
	r, err := info.Text()
	if err != nil {
		return // refused or unknown: nothing said either way
	}
	max, policy := parseMemory(r)
	if max > 0 && (strings.HasPrefix(policy, "allkeys-") || strings.HasPrefix(policy, "volatile-")) {
		warn(log, addr, tracing.WarningEviction,
			"relock: this Redis server may evict lock keys under memory pressure, and an evicted lock goes to a second owner "+
				"while its holder still works; set maxmemory-policy noeviction, or keep locks on an instance of their own",
			slog.Int64("maxmemory", max), slog.String("maxmemory_policy", policy))
	}
}

// parseMemory reads maxmemory and maxmemory_policy from INFO memory.
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
