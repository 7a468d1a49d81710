package options

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/relock-go/relock/watchdog"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestDefaults(t *testing.T) {
	c := Apply(nil)
	require.Equal(t, DefaultWatchdogTimeout, c.Lease())
	require.True(t, c.Renewed())
	require.Equal(t, DefaultUnlockTimeout, c.UnlockTimeout)
	require.Same(t, watchdog.Default(), c.Watchdog)
	require.Empty(t, c.Err)
}

func TestFixedLease(t *testing.T) {
	c := Apply([]Option{WithLeaseTime(time.Second), WithWatchdogTimeout(time.Minute)})
	require.Equal(t, time.Second, c.Lease())
	require.False(t, c.Renewed())
}

func TestInvalidKeepsFirstReason(t *testing.T) {
	for name, o := range map[string]Option{
		"lease":    WithLeaseTime(0),
		"sub-ms":   WithLeaseTime(time.Microsecond),
		"watchdog": WithWatchdogTimeout(time.Millisecond),
		"wait":     WithWaitTimeout(-time.Second),
		"unlock":   WithUnlockTimeout(0),
	} {
		c := Apply([]Option{o, WithLeaseTime(-1)})
		require.NotEmpty(t, c.Err, name)
		require.NotContains(t, c.Err, "-1ns", name+": the first invalid option is reported")
	}
	require.Empty(t, Apply([]Option{nil}).Err, "a nil option is ignored")
}

func TestCheckAndLatchPrefix(t *testing.T) {
	c := Apply(nil)
	require.Equal(t, "nil redis client", c.Check(nil, "lock", "a"))
	require.Equal(t, "redisson_unlock_latch:{a}:", LatchPrefix("a"))
	require.Equal(t, "redisson_unlock_latch:{t}x:", LatchPrefix("{t}x"))
	bad := Apply([]Option{WithLeaseTime(0)})
	require.Contains(t, bad.Check(nil, "lock", "a"), "nil redis client", "the client is checked first")
}
