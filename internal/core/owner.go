package core

import (
	"context"
	"strconv"
	"sync/atomic"

	"github.com/google/uuid"
)

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

// RequestKey returns prefix + a new RequestID in one allocation (a latch key).
func RequestKey(prefix string) string {
	var buf [128]byte
	b := append(buf[:0], prefix...)
	b = append(b, processID...)
	b = append(b, ":r"...)
	b = strconv.AppendUint(b, reqSeq.Add(1), 10)
	return string(b)
}

// RequestID names one unlock request, unique across processes, cheaper than a uuid.
func RequestID() string { return RequestKey("") }

// pinnedOwner returns the owner pinned in ctx with WithOwner.
func pinnedOwner(ctx context.Context) (string, bool) {
	id, ok := ctx.Value(ownerKey{}).(string)
	return id, ok && id != ""
}

// WithOwner pins id as the owner of acquisitions through ctx that find no hold.
func WithOwner(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, ownerKey{}, id)
}
