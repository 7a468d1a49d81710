//go:build faults

package faults

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Partitions and restarts make go-redis log every failed dial; the
	// tests assert on the errors the primitives return instead.
	redis.SetLogger(quietLogger{})
	goleak.VerifyTestMain(m, ignoreToxiproxy)
}

// ignoreToxiproxy leaves out toxiproxy's toxic goroutines, which may stay
// blocked on a link's channel after their proxy stopped (a toxic removed
// while it held a chunk): toxiproxy's, not ours, and they end with the
// test process.
var ignoreToxiproxy = goleak.IgnoreAnyFunction("github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run")

type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...any) {}
