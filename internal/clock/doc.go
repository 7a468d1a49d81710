// Package clock is the renewal engine's time source: Real (package time) or
// Fake, which moves only on Advance, so tests drive leases by hand in step
// with miniredis's FastForward. Package watchdog offers them as Clock and FakeClock.
package clock
