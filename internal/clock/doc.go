// Package clock is the time source of the renewal engine (internal/lease),
// an interface so that tests can drive lease renewal and loss by hand, in
// step with miniredis's FastForward, instead of sleeping. Real uses the
// monotonic clock of package time; Fake moves only when Advance is called.
// Package watchdog offers it to users as Clock and FakeClock.
package clock
