package core_test

import (
	"context"
	"net"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/relock-go/relock/internal/core"
)

// A give-back that keeps failing with a transient error tries again with
// a backoff, not in a tight loop, and stops at the end of its window.
func TestGiveBackSpacesItsTries(t *testing.T) {
	const window = 300 * time.Millisecond
	var tries atomic.Int32
	var last atomic.Int64
	start := time.Now()
	core.GiveBack(context.Background(), nil, window, func(context.Context) error {
		tries.Add(1)
		last.Store(int64(time.Since(start)))
		return &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}
	})
	time.Sleep(window + 300*time.Millisecond)
	n := tries.Load()
	assert.GreaterOrEqual(t, n, int32(3), "tries within %v", window)
	assert.LessOrEqual(t, n, int32(15), "tries within %v: not spaced", window)
	assert.GreaterOrEqual(t, time.Duration(last.Load()), window*2/3, "the give-back stopped long before its window ended")
	assert.Equal(t, n, tries.Load())
	t.Logf("%d tries in %v, the last at %v", n, window, time.Duration(last.Load()).Round(time.Millisecond))
}
