// Package lease is the renewal engine that every primitive shares: one
// hashed timing wheel and one goroutine per Watchdog, renewing the leases
// of held locks in batches (one script per cluster slot and kind, one
// pipeline per client) and reporting a lease lost no later than the
// instant it could lapse on the server. Package watchdog is what a user
// configures of it (New, Default, the options, Stats); the primitives
// start, find, retain and stop leases here. See package watchdog's
// documentation for the timing rules.
package lease
