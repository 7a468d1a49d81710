package core

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/lease"
)

// The questions a context answers about the holds it carries: whose, what
// token, how long still, and a context without them.

// OwnerOf returns the owner of the innermost hold ctx carries under one of
// keys: an acquisition of the same lock (or its other side) through ctx
// re-enters as that owner. Holds of other locks do not count, so
// goroutines fanned out from a hold of one lock are separate owners of
// every other. A hold that has ended still names its owner, who may hold
// the lock through an outer hold. Without such a hold, an owner pinned
// with WithOwner (tests name their owners so) is used.
func OwnerOf(ctx context.Context, keys ...Key) (string, bool) {
	for _, k := range keys {
		if h, ok := From(ctx, k); ok && h.Owner != "" {
			return h.Owner, true
		}
		if h, ok := ctx.Value(also{k}).(*Hold); ok && h.Owner != "" {
			return h.Owner, true
		}
	}
	return pinnedOwner(ctx)
}

// TokenOf returns the fencing token of the innermost hold ctx carries
// under the first of keys it has a hold of: one lock's token in a chain
// of nested holds of several. False when that hold has ended, as Token.
func TokenOf(ctx context.Context, keys ...Key) (int64, bool) {
	if ctx == nil {
		return 0, false
	}
	for _, k := range keys {
		if h, ok := From(ctx, k); ok {
			if h.Token == 0 || !h.live() {
				return 0, false
			}
			return h.Token, true
		}
	}
	return 0, false
}

// Nested reports whether ctx's hold under inner is live and was taken
// through the context of its hold under outer: releasing the outer one
// through ctx would be out of order.
func Nested(ctx context.Context, outer, inner Key) bool {
	hi, ok := From(ctx, inner)
	if !ok || hi.state.Load() != live {
		return false
	}
	ho, ok := From(ctx, outer)
	if !ok {
		return false
	}
	in, ok := From(hi.parent, outer)
	return ok && in == ho
}

// Remaining is how long the innermost hold ctx carries may still be
// counted on (see lease.Remaining); false when ctx carries no hold.
func Remaining(ctx context.Context) (time.Duration, bool) {
	if ctx == nil {
		return 0, false
	}
	h, ok := ctx.Value(holdProbe{}).(*Hold)
	if !ok {
		return 0, false
	}
	if h.state.Load() != live {
		return 0, true
	}
	return lease.Remaining(h.Lease), true
}

type holdProbe struct{}

// Owner returns the owner of the innermost hold ctx carries, of any lock:
// for inspection (a test, a soak's report), never for acquiring.
func Owner(ctx context.Context) (string, bool) {
	h, ok := ctx.Value(holdProbe{}).(*Hold)
	if !ok || h.Owner == "" {
		return "", false
	}
	return h.Owner, true
}

// also asks for a hold that answers for a key it was given (Hold.Also).
type also struct{ Key }

// NewOwner returns a context with ctx's values but none of its holds (nor
// their tokens) and none of its cancellation (a hold's context ends with
// the hold, which would end a wait for that very lock): what is acquired
// through it is a fresh owner's, even of a lock ctx holds.
func NewOwner(ctx context.Context) context.Context { return fresh{context.WithoutCancel(ctx)} }

type fresh struct{ context.Context }

func (f fresh) Value(k any) any {
	switch k.(type) {
	case Key, also, holdProbe, tokenKey:
		return nil
	}
	if isOwnerKey(k) {
		return nil
	}
	return f.Context.Value(k)
}
