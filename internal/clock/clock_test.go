package clock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestFakeFiresOnlyWhenAdvanced(t *testing.T) {
	start := time.Unix(1000, 0)
	f := NewFake(start)
	tm := f.NewTimer(time.Second)
	require.Equal(t, 1, f.Pending())
	f.Advance(999 * time.Millisecond)
	select {
	case <-tm.C():
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Millisecond)
	select {
	case at := <-tm.C():
		require.Equal(t, start.Add(time.Second), at)
	default:
		t.Fatal("did not fire")
	}
	require.Equal(t, 0, f.Pending())
	tm.Reset(time.Second)
	require.True(t, tm.Stop())
	f.Advance(2 * time.Second)
	select {
	case <-tm.C():
		t.Fatal("stopped timer fired")
	default:
	}
}

func TestRealTimer(t *testing.T) {
	tm := Real.NewTimer(time.Millisecond)
	<-tm.C()
	require.False(t, tm.Stop())
}
