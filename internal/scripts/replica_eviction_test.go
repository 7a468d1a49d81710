package scripts_test

import (
	"bytes"
	"log/slog"
	"strconv"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/scripts"
	"github.com/relock-go/relock/internal/telemetry/telemetrytest"
	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/tracing"
)

func itoa(n int) string { return strconv.Itoa(n) }

// logs captures what the package warns through slog.
type logs struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logs) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logs) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// captureLogs returns policy with its warnings sent to a buffer for the
// test.
func captureLogs(t *testing.T) (*logs, scripts.ReplicaPolicy) {
	l := &logs{}
	scripts.ForgetWarnings()
	p := policy
	p.Logger = slog.New(slog.NewTextHandler(l, nil))
	return l, p
}

// A server that may evict a lock's keys is warned of once, with the
// policy and what to set instead; noeviction, or no maxmemory, is not.
func TestEvictionPolicyWarnedOnce(t *testing.T) {
	ctx := ctxT(t)
	for _, tc := range []struct {
		maxmemory, policy string
		warn              bool
	}{
		{"2mb", "allkeys-lru", true},
		{"2mb", "volatile-lru", true},
		{"2mb", "noeviction", false},
		{"0", "allkeys-lru", false},
	} {
		t.Run(tc.maxmemory+"-"+tc.policy, func(t *testing.T) {
			l, policy := captureLogs(t)
			metrics := telemetrytest.New(t)
			old := otel.GetMeterProvider()
			otel.SetMeterProvider(metrics.Provider)
			t.Cleanup(func() { otel.SetMeterProvider(old) })
			s := redistest.StartServer(t, redistest.WithArgs("--maxmemory", tc.maxmemory, "--maxmemory-policy", tc.policy))
			c := s.Client(t)
			for range 3 {
				cmd, _ := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c), policy)
				require.NoError(t, cmd.Err())
			}
			c2 := s.Client(t) // another client of the same server
			cmd, _ := setScript.With(1, "k", "v").Synced(ctx, conn.Of(c2), policy)
			require.NoError(t, cmd.Err())
			out := l.String()
			counted := metrics.Sum(t, tracing.MetricServerWarnings,
				tracing.WarningReason.String(tracing.WarningEviction), tracing.ServerAddress.String(s.Addr))
			if !tc.warn {
				require.Empty(t, out)
				require.Zero(t, counted)
				return
			}
			require.Equal(t, int64(1), counted)
			require.Equal(t, 1, bytes.Count([]byte(out), []byte("level=WARN")), "once per server: %s", out)
			require.Contains(t, out, "maxmemory_policy="+tc.policy)
			require.Contains(t, out, "noeviction")
			require.Contains(t, out, "server="+s.Addr)
			require.Contains(t, out, "reason=eviction")
		})
	}
}

func TestParseMemory(t *testing.T) {
	max, policy := scripts.ParseMemory("# Memory\r\nused_memory:1000\r\nmaxmemory:2097152\r\nmaxmemory_human:2.00M\r\nmaxmemory_policy:volatile-lru\r\n")
	require.Equal(t, int64(2097152), max)
	require.Equal(t, "volatile-lru", policy)
}
