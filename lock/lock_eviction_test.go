package lock_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/testkit/redistest"
	"github.com/relock-go/relock/lock"
)

// syncBuffer is a log sink tests read while the library writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// captureDefaultLog sends slog's default logger to a buffer for the test.
func captureDefaultLog(t *testing.T) *syncBuffer {
	buf := &syncBuffer{}
	old := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(buf, nil)))
	t.Cleanup(func() { slog.SetDefault(old) })
	return buf
}

// A server whose eviction policy may evict a lock's keys is warned of
// through the default slog logger, with the fix, once.
func TestEvictionPolicyWarned(t *testing.T) {
	for _, policy := range []string{"allkeys-lru", "volatile-lru"} {
		t.Run(policy, func(t *testing.T) {
			ctx := ctxT(t)
			logs := captureDefaultLog(t)
			s := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", policy))
			c := s.Client(t)
			for i := range 3 {
				mu := lock.New(c, fmt.Sprintf("job:%d", i))
				held, err := mu.TryLock(ctx)
				require.NoError(t, err)
				require.NoError(t, mu.Unlock(held))
			}
			out := logs.String()
			require.Equal(t, 1, strings.Count(out, "level=WARN"), out)
			require.Contains(t, out, "evict")
			require.Contains(t, out, "maxmemory_policy="+policy)
			require.Contains(t, out, "noeviction")
		})
	}
}

// With the advice followed (noeviction), a server filled up while 20
// locks are held refuses the filler's writes (OOM) and never grants a
// held lock to a second owner; nothing is warned.
func TestNoEvictionNeverGrantsAHeldLock(t *testing.T) {
	ctx := ctxT(t)
	logs := captureDefaultLog(t)
	s := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "noeviction"))
	c := s.Client(t)
	const locks = 20
	names := make([]string, locks)
	holds := make([]context.Context, locks)
	mus := make([]*lock.Mutex, locks)
	for i := range names {
		names[i] = fmt.Sprintf("job:%d", i)
		mus[i] = lock.New(c, names[i])
		held, err := mus[i].Lock(ctx)
		require.NoError(t, err)
		holds[i] = held
	}

	filler := s.Client(t)
	value := strings.Repeat("x", 64<<10)
	oom := 0
	for i := 0; i < 200 && oom < 5; i++ {
		if err := filler.Set(ctx, fmt.Sprintf("fill:%d", i), value, 0).Err(); err != nil {
			require.ErrorContains(t, err, "OOM")
			oom++
		}
	}
	require.Positive(t, oom, "the filler is refused once memory is full")

	other := s.Client(t)
	grants := 0
	for range 5 {
		for _, name := range names {
			if _, err := lock.New(other, name).TryLock(ctx); err == nil {
				grants++
			}
		}
	}
	require.Zero(t, grants, "a held lock is never granted to a second owner")
	for i, held := range holds {
		require.NoError(t, context.Cause(held), "holder %d still holds", i)
	}
	require.Empty(t, logs.String())

	// Room to release: the filler's keys go.
	for i := range 200 {
		filler.Del(ctx, fmt.Sprintf("fill:%d", i))
	}
	for i, held := range holds {
		require.NoError(t, mus[i].Unlock(held))
	}
}

// WithLogger sends the warning to the logger it gives, not the default
// one; a nil logger is refused.
func TestEvictionWarningGoesToWithLogger(t *testing.T) {
	ctx := ctxT(t)
	def := captureDefaultLog(t)
	own := &syncBuffer{}
	s := redistest.StartServer(t, redistest.WithArgs("--maxmemory", "2mb", "--maxmemory-policy", "allkeys-lru"))
	mu := lock.New(s.Client(t), "job", lock.WithLogger(slog.New(slog.NewTextHandler(own, nil))))
	held, err := mu.TryLock(ctx)
	require.NoError(t, err)
	require.NoError(t, mu.Unlock(held))
	require.Contains(t, own.String(), "maxmemory_policy=allkeys-lru")
	require.Empty(t, def.String())

	_, err = lock.New(s.Client(t), "job", lock.WithLogger(nil)).TryLock(ctx)
	require.ErrorIs(t, err, lock.ErrInvalidArgument)
	require.ErrorContains(t, err, "nil logger")
}
