package conn

import (
	"context"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"
	"github.com/relock-go/relock/internal/errs"
)

// Transient reports whether err may pass with time, so that a waiter
// waits through it: the network, a Redis loading, busy, failing over or
// resharding, out of connections, or replicas slow to acknowledge
// (errs.ErrNotReplicated). Not an invalid argument, a script's error
// reply (those would recur), a closed client or a context's end.
func Transient(err error) bool {
	switch {
	case err == nil,
		errors.Is(err, errs.ErrInvalidArgument),
		errors.Is(err, redis.ErrClosed),
		errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, errs.ErrNotReplicated):
		return true // the replicas may catch up
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return hasPrefix(rerr.Error(), tryAgainReplies) || hasPrefix(rerr.Error(), transientReplies)
	}
	var nerr net.Error
	return errors.As(err, &nerr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.ECONNABORTED) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted) ||
		// a per-try timeout: the caller's own deadline is checked first
		errors.Is(err, context.DeadlineExceeded)
}

// transientReplies pass too. MOVED and ASK come from a node addressed
// directly (replica sync), which the client does not redirect.
var transientReplies = []string{
	"max number of clients",
	"MOVED ", "ASK ",
}

// tryAgainReplies are the error reply prefixes that say the command did
// not run and may in a moment.
var tryAgainReplies = []string{"LOADING", "BUSY ", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN", "READONLY"}

// TryAgain reports whether err is one of tryAgainReplies: every call
// sends it again within its bound.
func TryAgain(err error) bool {
	if err == nil {
		return false // before rerr, which escapes: no allocation on success
	}
	var rerr redis.Error
	return errors.As(err, &rerr) && hasPrefix(rerr.Error(), tryAgainReplies)
}

func hasPrefix(msg string, prefixes []string) bool {
	msg = strings.TrimPrefix(msg, "ERR ")
	for _, p := range prefixes {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// MayHaveRun reports whether a call that failed with err may still have
// run on the server: not for a Redis reply, a failed dial, an exhausted
// pool or a closed client.
func MayHaveRun(err error) bool {
	var rerr redis.Error
	var oerr *net.OpError
	switch {
	case err == nil:
		return false
	case AfterLate(err) != nil:
		return true // it goes on, whatever cause ended its caller's wait
	case errors.As(err, &rerr), errors.Is(err, redis.Nil),
		errors.Is(err, errs.ErrNotReplicated), // undone by the try that found it
		errors.Is(err, errs.ErrWrongKind),     // the script's answer: it wrote nothing
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return false
	case errors.As(err, &oerr) && oerr.Op == "dial":
		return false
	}
	return true
}

// Resend reports whether a call that failed with err is worth resending
// within its own bound (a release, a give-back): a TryAgain reply or a
// network failure; not another reply, a context's end or a closed client.
func Resend(err error) bool {
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return hasPrefix(rerr.Error(), tryAgainReplies)
	}
	if errors.Is(err, redis.Nil) || errors.Is(err, redis.ErrClosed) {
		return false
	}
	return !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

// Timeout reports whether err is a context deadline or a network timeout.
func Timeout(err error) bool {
	var nerr net.Error
	return errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &nerr) && nerr.Timeout())
}

// Redirect reports a cluster's redirection reply, MOVED or ASK (the
// command did not run), and the slot it names.
func Redirect(err error) (slot int, ok bool) {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return 0, false
	}
	f := strings.Fields(rerr.Error())
	if len(f) < 2 || (f[0] != "MOVED" && f[0] != "ASK") {
		return 0, false
	}
	slot, perr := strconv.Atoi(f[1])
	return slot, perr == nil
}
