package scripts_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/scripts"
)

func TestTTLReadsPTTL(t *testing.T) {
	require.Equal(t, time.Duration(0), scripts.TTL(-2*time.Millisecond))
	require.Equal(t, time.Duration(0), scripts.TTL(-2))
	require.Equal(t, time.Duration(-1), scripts.TTL(-1*time.Millisecond))
	require.Equal(t, 5*time.Second, scripts.TTL(5*time.Second))
}
