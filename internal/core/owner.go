package core

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"
)

// ownerKey is the context key of an owner pinned with WithOwner.
type ownerKey struct{}

var (
	processID = uuid.NewString()
	seq       atomic.Uint64
	reqSeq    atomic.Uint64
)

// ProcessID is this process's uuid, the prefix of every owner it mints.
func ProcessID() string { return processID }

// Mint returns a fresh owner id, unique across processes.
func Mint() string {
	return processID + ":" + strconv.FormatUint(seq.Add(1), 10)
}

// RequestKey returns prefix followed by a new RequestID, in one allocation:
// the key of one unlock request's idempotency latch.
func RequestKey(prefix string) string {
	var buf [128]byte
	b := append(buf[:0], prefix...)
	b = append(b, processID...)
	b = append(b, ":r"...)
	b = strconv.AppendUint(b, reqSeq.Add(1), 10)
	return string(b)
}

// RequestID returns an id unique across processes and calls, cheaper than a
// random uuid: it names one unlock request for its idempotency latch.
func RequestID() string { return RequestKey("") }

// isOwnerKey reports whether k is the context key the owner is stored
// under: a context type that carries the owner itself (a hold's) answers
// for it.
func isOwnerKey(k any) bool {
	_, ok := k.(ownerKey)
	return ok
}

// pinnedOwner returns the owner pinned in ctx with WithOwner.
func pinnedOwner(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(ownerKey{}).(string)
	return id, ok && id != ""
}

// WithOwner returns a context that carries id as its owner: an
// acquisition on it that finds no hold of its lock acquires as id.
func WithOwner(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ownerKey{}, id)
}
