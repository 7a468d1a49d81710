package core

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// A lease is the TTL a crashed holder leaves on its keys, and an unlock
// timeout twice that on a latch: neither may keep a key past the
// keyspace bound.
func TestDurationsWithinKeyspaceBound(t *testing.T) {
	for name, o := range map[string]Option{
		"lease":            WithLeaseTime(MaxLease + time.Millisecond),
		"lease max":        WithLeaseTime(math.MaxInt64),
		"watchdog":         WithWatchdogTimeout(MaxLease + time.Millisecond),
		"watchdog max":     WithWatchdogTimeout(math.MaxInt64),
		"unlock timeout":   WithUnlockTimeout(MaxUnlockTimeout + time.Millisecond),
		"unlock max":       WithUnlockTimeout(math.MaxInt64),
		"node timeout":     WithNodeTimeout(MaxUnlockTimeout + time.Millisecond),
		"node timeout max": WithNodeTimeout(math.MaxInt64),
	} {
		c := Apply([]Option{o})
		require.Contains(t, c.Invalid, "must be at most", name)
	}
	c := Apply([]Option{WithLeaseTime(MaxLease), WithWatchdogTimeout(MaxLease), WithUnlockTimeout(MaxUnlockTimeout), WithNodeTimeout(MaxUnlockTimeout)})
	require.Empty(t, c.Invalid, "the bound itself is accepted")
	require.Equal(t, 24*time.Hour, MaxLease)
}
