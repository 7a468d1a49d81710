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

// The classifiers below are the one place that decides what an error from
// Redis or the network means for a lock: whether to wait through it, whether
// the script may have run, whether to send again.

// Transient reports whether err may pass with time, so that a waiter
// keeps waiting through it rather than giving up: the network (a dial
// error, a reset or closed connection, a timeout), a Redis that is
// loading, failing over or resharding (LOADING, READONLY, MASTERDOWN,
// CLUSTERDOWN, TRYAGAIN, MOVED, ASK), replicas that did not acknowledge
// an acquisition in time (errs.ErrNotReplicated), busy with a script (BUSY) or out of
// connections. Not transient: an invalid argument, an error Redis replied
// for the script (those would recur), a closed client, a context's end.
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
		// A per-call timeout of the try (the caller's own deadline is
		// checked before this is asked).
		errors.Is(err, context.DeadlineExceeded)
}

// transientReplies are the prefixes of Redis error replies that pass,
// besides the try-again ones.
var transientReplies = []string{
	"max number of clients",
	// A redirection the client did not follow (replica sync sends to the
	// slot's node itself): the slot map moves on.
	"MOVED ", "ASK ",
}

// tryAgainReplies are the prefixes of Redis error replies that say the
// command did not run and may run in a moment: a server loading its data,
// running a long script, failing over or resharding.
var tryAgainReplies = []string{"LOADING", "BUSY ", "TRYAGAIN", "MASTERDOWN", "CLUSTERDOWN", "READONLY"}

// TryAgain reports whether err is a Redis reply that says the command did
// not run and may in a moment (LOADING, BUSY, TRYAGAIN, MASTERDOWN,
// CLUSTERDOWN, READONLY): every call sends it again within its bound.
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
// run its script on the server: the command may have been sent before the
// connection broke, a read timed out or the context ended. Not so for a
// reply of Redis (the script failed, or never ran), a dial that failed,
// an exhausted pool or a closed client: nothing was sent then.
func MayHaveRun(err error) bool {
	var rerr redis.Error
	var oerr *net.OpError
	switch {
	case err == nil, errors.As(err, &rerr), errors.Is(err, redis.Nil),
		errors.Is(err, errs.ErrNotReplicated), // undone by the try that found it
		errors.Is(err, redis.ErrClosed), errors.Is(err, redis.ErrPoolTimeout),
		errors.Is(err, redis.ErrPoolExhausted):
		return false
	case errors.As(err, &oerr) && oerr.Op == "dial":
		return false
	}
	return true
}

// Resend reports whether a call that failed with err is worth sending
// again within its own time bound (a release, a give-back): a reply that
// says to try again (TryAgain), or a failure of the network; not another
// reply of Redis, which would recur, nor the end of the call's context,
// nor a closed client (nothing may outlive it).
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

// Timeout reports whether err is a reply that did not come in time (a
// context deadline or a network timeout), as opposed to any other failure.
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
