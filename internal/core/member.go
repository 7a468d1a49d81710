package core

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"time"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/lease"
)

// Member is what a primitive offers the Redlock: one lock on one Redis,
// driven one attempt at a time for the Redlock's owner, with its renewal.
type Member struct {
	// Name is the lock's name; Kind what side of what primitive it is.
	Name, Kind string
	// Addr names the Redis it lives on, for errors and spans.
	Addr string
	// Try makes one attempt for owner with lease; when another owner holds
	// the lock, ttl says for how long (or < 0).
	Try func(ctx context.Context, owner string, lease time.Duration) (acquired bool, token int64, ttl time.Duration, err error)
	// Release gives back one count of owner's hold, retrying within
	// timeout (idempotent). held is false when owner held nothing there.
	Release func(ctx context.Context, owner string, timeout time.Duration) (held bool, err error)
	// TTL is how long the lock's key lasts (0: free; < 0: no expiry).
	TTL func(ctx context.Context) (time.Duration, error)
	// Renewal is the watchdog target that renews owner's hold.
	Renewal func(owner string) lease.Target
	// Client is the member's client, whose workers run the calls to it.
	Client Client
	// Key is the member's hold key, which a Redlock's hold answers for;
	// Reenter, those whose holds lend their owner (its own, the other side).
	Key     Key
	Reenter []Key
	// Given is what the member's own options set of Shared.
	Given Shared
}

// SameLock reports whether a and b are one lock on one server, which a
// Redlock cannot count twice: one name through one client, or clients with
// a common address (as written: "localhost" is not "127.0.0.1") and db.
func SameLock(a, b Member) bool {
	if a.Name != b.Name {
		return false
	}
	ca, cb := a.Key.Client(), b.Key.Client()
	if ca == (conn.Client{}) || cb == (conn.Client{}) {
		return false
	}
	if ca == cb {
		return true
	}
	addrsA, dbA := ca.Servers()
	addrsB, dbB := cb.Servers()
	return dbA == dbB && slices.ContainsFunc(addrsA, func(s string) bool { return slices.Contains(addrsB, s) })
}

// MemberSource is a primitive a Redlock can drive, sealed: only types
// embedding a MemberHook have its unexported method.
type MemberSource interface {
	redlockMember() (Member, error)
}

// MemberHook, embedded in a primitive, makes it a MemberSource returning
// it as a member; nil in a primitive not made by its constructor.
type MemberHook func() (Member, error)

func (h MemberHook) redlockMember() (Member, error) {
	if h == nil {
		return Member{}, errNotMade
	}
	return h()
}

var errNotMade = errors.New("not made by its package's New")

// MemberOf returns s as a member, refusing a nil pointer.
func MemberOf(s MemberSource) (Member, error) {
	if v := reflect.ValueOf(s); s == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return Member{}, fmt.Errorf("nil %T", s)
	}
	return s.redlockMember()
}
