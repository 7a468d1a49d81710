package core

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/lease"
)

func TestDefaults(t *testing.T) {
	c := Apply(nil)
	require.Equal(t, DefaultWatchdogTimeout, c.Lease())
	require.True(t, c.Renewed())
	require.Equal(t, DefaultUnlockTimeout, c.UnlockTimeout)
	require.Same(t, lease.Default(), c.Watchdog)
	require.Empty(t, c.Invalid)
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
		// Latches live 2*timeout in whole ms: 0 ms, refused by Redis.
		"sub-ms unlock": WithUnlockTimeout(time.Millisecond - 1),
		"1ns unlock":    WithUnlockTimeout(time.Nanosecond),
	} {
		c := Apply([]Option{o, WithLeaseTime(-1)})
		require.NotEmpty(t, c.Invalid, name)
		require.NotContains(t, c.Invalid, "-1ns", name+": the first invalid option is reported")
	}
	require.Empty(t, Apply([]Option{nil}).Invalid, "a nil option is ignored")
}

func TestCheck(t *testing.T) {
	c := Apply(nil)
	require.Equal(t, "nil redis client", c.Check(conn.Client{}, "lock", "a"))
	bad := Apply([]Option{WithLeaseTime(0)})
	require.Contains(t, bad.Check(conn.Client{}, "lock", "a"), "nil redis client", "the client is checked first")
}

// Every duration that reaches Redis as milliseconds is at least 1 ms, so
// that none becomes 0 ms there; the shortest accepted values are accepted.
func TestShortestDurations(t *testing.T) {
	c := Apply([]Option{WithUnlockTimeout(MinUnlockTimeout), WithLeaseTime(MinLease), WithWatchdogTimeout(MinLease)})
	require.Empty(t, c.Invalid)
	require.Equal(t, MinUnlockTimeout, c.UnlockTimeout)
	require.Positive(t, (2 * c.UnlockTimeout).Milliseconds(), "the unlock latch's PX")
	require.Positive(t, c.Lease().Milliseconds())
	require.GreaterOrEqual(t, MinLease, time.Millisecond)

	for _, d := range []time.Duration{time.Millisecond - 1, time.Microsecond, time.Nanosecond, 0, -time.Millisecond} {
		c := Apply([]Option{WithUnlockTimeout(d)})
		require.Contains(t, c.Invalid, "unlock timeout", d)
		require.Equal(t, DefaultUnlockTimeout, c.UnlockTimeout, "a refused value is not kept")
	}
}

// A Redlock's node timeout is the unlock timeout of a failed round's
// give-back, so it is held to the same minimum.
func TestNodeTimeoutAtLeastAMillisecond(t *testing.T) {
	for _, d := range []time.Duration{time.Millisecond - 1, time.Nanosecond, 0, -time.Second} {
		require.Contains(t, Apply([]Option{WithNodeTimeout(d)}).Invalid, "node timeout", d)
	}
	c := Apply([]Option{WithNodeTimeout(time.Millisecond)})
	require.Empty(t, c.Invalid)
	require.Equal(t, time.Millisecond, c.NodeTimeout)
}

// A Redlock's config adopts what a member gave and it did not, keeps what
// agrees, and names the first conflict.
func TestAdopt(t *testing.T) {
	wd := lease.New()
	member := Apply([]Option{WithLeaseTime(2 * time.Second), WithUnlockTimeout(time.Second), WithWatchdog(wd)}).Given

	c := Apply(nil)
	require.Empty(t, c.Adopt(member))
	require.Equal(t, 2*time.Second, c.Lease())
	require.False(t, c.Renewed())
	require.Equal(t, time.Second, c.UnlockTimeout)
	require.Same(t, wd, c.Watchdog)
	require.Empty(t, c.Adopt(member), "the same settings again agree")
	require.Empty(t, c.Adopt(Apply(nil).Given), "a member that gave nothing agrees")

	for name, tc := range map[string]struct {
		redlock, member []Option
		reason          string
	}{
		"lease":            {[]Option{WithLeaseTime(time.Second)}, []Option{WithLeaseTime(2 * time.Second)}, "lease time 2s differs from the lease time 1s"},
		"fixed vs renewed": {[]Option{WithWatchdogTimeout(time.Second)}, []Option{WithLeaseTime(time.Second)}, "lease time 1s differs from the watchdog timeout 1s"},
		"renewed vs fixed": {[]Option{WithLeaseTime(time.Second)}, []Option{WithWatchdogTimeout(time.Second)}, "watchdog timeout 1s differs from the lease time 1s"},
		"unlock":           {[]Option{WithUnlockTimeout(time.Second)}, []Option{WithUnlockTimeout(time.Minute)}, "unlock timeout 1m0s differs from the 1s"},
		"watchdog":         {[]Option{WithWatchdog(lease.New())}, []Option{WithWatchdog(wd)}, "watchdog differs"},
	} {
		t.Run(name, func(t *testing.T) {
			c := Apply(tc.redlock)
			before := c
			require.Contains(t, c.Adopt(Apply(tc.member).Given), tc.reason)
			require.Equal(t, before.Lease(), c.Lease(), "a conflict changes nothing")
		})
	}
}

// The public packages' types keep a constructor-only option from one
// acquisition and an option from a primitive that does not keep it; the
// run-time checks behind them still refuse such an option by name.
func TestRefusalsNameTheOption(t *testing.T) {
	c := Apply(nil)
	for name, o := range map[string]Option{
		"WithTracerProvider": WithTracerProvider(nil), "WithUnlockTimeout": WithUnlockTimeout(time.Second),
		"WithWatchdog": WithWatchdog(nil), "WithReplicaSync": WithReplicaSync(0), "WithDrift": WithDrift(0),
		"WithNodeTimeout": WithNodeTimeout(time.Second), "WithRecordedSize": WithRecordedSize(),
	} {
		_, why := c.PerCall("lock", []Option{o})
		require.Contains(t, why, name, name)
	}
	label := Apply([]Option{WithHolderLabel("pod-7")})
	require.Contains(t, label.Unsupported("redlock"), "WithHolderLabel")
	notice := Apply([]Option{WithForceUnlockNotice()})
	require.Contains(t, notice.Unsupported("semaphore"), "WithForceUnlockNotice")
	require.Empty(t, notice.Unsupported("lock"))
}
