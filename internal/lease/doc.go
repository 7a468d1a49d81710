// Package lease is the renewal engine every primitive shares: one hashed
// timing wheel and goroutine per Watchdog renews held locks' leases in
// batches (one script per cluster slot and kind, one pipeline per client)
// and reports a lease lost no later than it could lapse on the server.
// Package watchdog is its user-facing side (New, Default, options, Stats)
// and documents the timing rules.
package lease
