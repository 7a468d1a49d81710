package redistest

import (
	"testing"
	"time"

	"github.com/relock-go/relock/internal/clock"
)

// FakeClock is a fake clock (watchdog.FakeClock) for a watchdog under
// test, moved on an hour when t ends. The watchdog's goroutine sleeps on
// it, and when the last lease ended shortly before its wake-up only a
// move of the clock lets it find the wheel empty and end, as goleak
// checks it does.
func FakeClock(t testing.TB) *clock.Fake {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	t.Cleanup(func() { clk.Advance(time.Hour) })
	return clk
}
