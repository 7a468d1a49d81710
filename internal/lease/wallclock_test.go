package lease

import (
	"context"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/relock-go/relock/internal/clock"
	"github.com/relock-go/relock/internal/testkit/redistest"
)

// stepClock is the real clock whose WALL reading can be stepped (as NTP or
// an admin does) while its monotonic reading runs on, as time.Now behaves.
type stepClock struct{ step atomic.Int64 } // seconds added to the wall reading

func (c *stepClock) Now() time.Time {
	t := time.Now()
	if s := c.step.Load(); s != 0 {
		p := (*struct {
			wall uint64
			ext  int64
			loc  *time.Location
		})(unsafe.Pointer(&t))
		p.wall = uint64(int64(p.wall) + s<<30) // seconds live in bits 30..62
	}
	return t
}
func (c *stepClock) NewTimer(d time.Duration) clock.Timer { return clock.Real.NewTimer(d) }

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func TestWallClockStepDoesNotFreezeWheel(t *testing.T) {
	mr, rdb := redistest.Miniredis(t)
	_ = mr
	ctx := context.Background()
	clk := &stepClock{}
	w := New(WithClock(clk))
	var rec lostRecorder
	l := hold(t, ctx, w, rdb, "k", 300*time.Millisecond, true) // renew every 100 ms
	l.OnLost(&rec)
	defer l.Stop()
	time.Sleep(350 * time.Millisecond)
	before := w.Stats().Renewed
	require.Positive(t, before, "renews before the step")

	clk.step.Store(-3600) // wall clock stepped back one hour; monotonic time unaffected
	c0 := cpu()
	time.Sleep(time.Second)
	st := w.Stats()
	t.Logf("after step: renewed %d (before %d), lost %d, lost callbacks %d, now-wall %v, cpu in 1s: %v",
		st.Renewed, before, st.Lost, rec.n(), clk.Now().Format(time.TimeOnly), cpu()-c0)
	require.True(t, st.Renewed > before+3 || rec.n() == 1,
		"a 300 ms lease was neither renewed nor declared lost for 1 s after a wall-clock step")
}

func TestReviewWallClockStepBackSpins(t *testing.T) {
	_, rdb := redistest.Miniredis(t)
	ctx := context.Background()
	clk := &stepClock{}
	w := New(WithClock(clk))
	l := hold(t, ctx, w, rdb, "k", 30*time.Second, true)
	defer l.Stop()
	time.Sleep(50 * time.Millisecond)
	clk.step.Store(-3600)
	l2 := hold(t, ctx, w, rdb, "k2", 30*time.Second, true) // a lease taken after the step
	defer l2.Stop()
	time.Sleep(200 * time.Millisecond)
	c0 := cpu()
	time.Sleep(time.Second)
	used := cpu() - c0
	t.Logf("cpu used in 1 s with two idle 30 s leases: %v", used)
	require.Less(t, used, 200*time.Millisecond, "the wheel goroutine spins")
}
