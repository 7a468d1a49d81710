package doctor_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/cmd/relock/internal/doctor"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// usedMemory reads the server's used_memory from INFO memory.
func usedMemory(t *testing.T, s *redistest.Server) int64 {
	t.Helper()
	info, err := s.Client(t).Info(testCtx(t), "memory").Result()
	require.NoError(t, err)
	for line := range strings.SplitSeq(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "used_memory:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("INFO memory has no used_memory")
	return 0
}

// With maxmemory and noeviction, a full server refuses the writes that
// need memory: the doctor says what that means for locks, and warns when
// the server is over its limit or near it.
func TestMemoryNearOrOverMaxmemoryIsReported(t *testing.T) {
	ctx := testCtx(t)
	// AOF always: nothing else for the doctor to warn of
	_, s := server(t, doctor.Config{}, "--maxmemory", "64mb", "--maxmemory-policy", "noeviction",
		"--appendonly", "yes", "--appendfsync", "always")
	c := s.Client(t)

	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "1").Err())
	rep := doctor.CheckServer(ctx, c, doctor.Config{})
	f := only(t, rep, "", "eviction")
	assert.Contains(t, f.Message, "new acquisitions fail with an OOM error")
	assert.Contains(t, f.Message, "renewed and released")
	assert.Equal(t, doctor.Warn, rep.Worst, "worst severity of a server over its maxmemory")
	f = only(t, rep, "", "memory")
	assert.Equal(t, doctor.Warn, f.Severity, f.Message)
	assert.Contains(t, f.Message, "over the limit")
	assert.Contains(t, f.Message, "every new acquisition fails with an OOM error")
	assert.Contains(t, f.Fix, "maxmemory")

	near := usedMemory(t, s) * 100 / 95 // about 95% used
	require.NoError(t, c.ConfigSet(ctx, "maxmemory", strconv.FormatInt(near, 10)).Err())
	f = only(t, doctor.CheckServer(ctx, c, doctor.Config{}), "", "memory")
	assert.Equal(t, doctor.Warn, f.Severity, f.Message)
	assert.Contains(t, f.Message, "near the limit")

	require.NoError(t, c.ConfigSet(ctx, "maxmemory", "64mb").Err())
	rep = doctor.CheckServer(ctx, c, doctor.Config{})
	assert.Equal(t, doctor.OK, only(t, rep, "", "eviction").Severity)
	f = only(t, rep, "", "memory")
	assert.Equal(t, doctor.OK, f.Severity, f.Message)
	assert.Contains(t, f.Message, "of maxmemory")
}

// Without maxmemory there is no limit to report against.
func TestMemoryWithoutMaxmemoryIsNotReported(t *testing.T) {
	rep, _ := server(t, doctor.Config{}, "--maxmemory", "0")
	require.Empty(t, all(rep, "", "memory"))
}
