package core

import (
	"context"
	"time"

	"github.com/relock-go/relock/internal/lease"
)

// OwnerOf returns the owner of ctx's innermost hold under one of keys (an
// ended hold's too: it may have an outer one), as whom an acquisition
// re-enters; else the WithOwner one. Holds of other locks do not count:
// goroutines fanned out from one lock's hold own every other separately.
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

// TokenOf is Token for the hold under the first of keys ctx has a hold
// of: one lock's token among nested holds of several.
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

// Nested reports whether ctx's live hold under inner was taken through its
// hold under outer, which ctx would then release out of order.
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

// Owner returns the owner of ctx's innermost hold of any lock, for
// inspection only, never for acquiring.
func Owner(ctx context.Context) (string, bool) {
	h, ok := ctx.Value(holdProbe{}).(*Hold)
	if !ok || h.Owner == "" {
		return "", false
	}
	return h.Owner, true
}

// also asks for a hold that answers for a key it was given (Hold.Also).
type also struct{ Key }

// NewOwner returns ctx's values without its holds, tokens or cancellation
// (a hold's context would end a wait for that very lock): what is acquired
// through it is a fresh owner's, even of a lock ctx holds.
func NewOwner(ctx context.Context) context.Context { return fresh{context.WithoutCancel(ctx)} }

type fresh struct{ context.Context }

func (f fresh) Value(k any) any {
	switch k.(type) {
	case Key, also, holdProbe, tokenKey, ownerKey:
		return nil
	}
	return f.Context.Value(k)
}
