package owner

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"
)

type ctxKey struct{}

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

// IsKey reports whether k is the context key the owner is stored under:
// a context type that carries the owner itself (a hold's) answers for it.
func IsKey(k any) bool {
	_, ok := k.(ctxKey)
	return ok
}

// From returns the owner carried by ctx.
func From(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(ctxKey{}).(string)
	return id, ok && id != ""
}

// With returns a context that carries id.
func With(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ctxKey{}, id)
}
