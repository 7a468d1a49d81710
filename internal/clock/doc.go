// Package clock is the time source of the watchdog and the wait loop, an
// interface so that tests can drive lease renewal by hand, in step with
// miniredis's FastForward, instead of sleeping. Real uses the monotonic
// clock of package time; Fake moves only when Advance is called.
package clock
