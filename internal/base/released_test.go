package base_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock"
	"github.com/relock-go/relock/internal/base"
)

func TestReleasedReadsTheReply(t *testing.T) {
	boom := errors.New("boom")
	require.NoError(t, base.Released(1, nil, nil, "gone"))
	require.NoError(t, base.Released(0, nil, nil, "gone"))
	require.ErrorIs(t, base.Released(2, nil, nil, "gone"), relock.ErrWaitersNotTold)
	require.ErrorIs(t, base.Released(1, boom, nil, "gone"), boom)
}
