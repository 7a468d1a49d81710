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
// driven for an owner the Redlock chooses (one owner across all masters),
// one attempt at a time, with the watchdog target that renews it.
type Member struct {
	// Name is the lock's name; Kind what side of what primitive it is.
	Name, Kind string
	// Addr names the Redis it lives on, for errors and spans.
	Addr string
	// Try makes one attempt for owner with lease. When another owner holds
	// the lock, acquired is false and ttl says for how long (or < 0).
	Try func(ctx context.Context, owner string, lease time.Duration) (acquired bool, token int64, ttl time.Duration, err error)
	// Release gives back one count of owner's hold, retrying within
	// timeout (idempotent). held is false when owner held nothing there.
	Release func(ctx context.Context, owner string, timeout time.Duration) (held bool, err error)
	// TTL is how long the member lock's key lasts (0: free; < 0: no
	// expiry), whoever holds it.
	TTL func(ctx context.Context) (time.Duration, error)
	// Renewal is the watchdog target that renews owner's hold.
	Renewal func(owner string) lease.Target
	// Workers run the calls to this member (conn.For its client).
	Workers *conn.Pool
	// Key is the member's hold key; a Redlock's hold answers for it, so
	// that the member re-enters through the Redlock's context. Reenter
	// are the keys whose holds lend their owner to the member (its own,
	// and an rwlock's other side).
	Key     Key
	Reenter []Key
	// Given is what the member's own options set of what it must share
	// with the Redlock (its lease, unlock timeout, watchdog).
	Given Shared
}

// SameLock reports whether a and b are one lock on one server, which a
// Redlock cannot count twice: the same name (the Redis key, which a
// Mutex and both sides of an RWMutex of that name share) through the
// same client, or through clients whose options name a common server
// address and the same database. Addresses are compared as written, so
// "localhost" and "127.0.0.1" are not matched.
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

// MemberSource is a primitive a Redlock can drive. Its one method is unexported,
// so only a type that embeds a MemberHook (this module's primitives, through an
// unexported alias) has it: redlock.Member is sealed by it.
type MemberSource interface {
	redlockMember() (Member, error)
}

// MemberHook, embedded in a primitive, makes it a MemberSource: the function returns
// the primitive as a member. A primitive not made by its constructor has
// none.
type MemberHook func() (Member, error)

func (h MemberHook) redlockMember() (Member, error) {
	if h == nil {
		return Member{}, errNotMade
	}
	return h()
}

var errNotMade = errors.New("not made by its package's New")

// MemberOf returns s as a member. A nil pointer is refused with the reason,
// not dereferenced.
func MemberOf(s MemberSource) (Member, error) {
	if v := reflect.ValueOf(s); s == nil || v.Kind() == reflect.Pointer && v.IsNil() {
		return Member{}, fmt.Errorf("nil %T", s)
	}
	return s.redlockMember()
}
