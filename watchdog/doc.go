// Package watchdog keeps the leases of held locks alive.
//
// A lock held without a fixed lease time is written with a short TTL (30 s
// by default) and renewed at a third of it for as long as it is held, so
// that a crashed holder's lock frees itself while a live holder keeps it.
// One Watchdog serves every primitive of the process: a hashed timing wheel
// driven by one goroutine (which exits when nothing is held). Renewals that
// fall due in the same tick are batched: one multi-key script per cluster
// slot and primitive kind, all of a client's scripts in one pipeline, so
// 100,000 held locks cost a few round trips per tick, not 100,000.
//
// A renewal that errors is retried soon, until the lease could lapse on the
// server, measured on the local monotonic clock from the send time of the
// last successful renewal. A lease whose key is gone, or that passes that
// instant unrenewed, is lost: its holder is told through OnLost no later
// than that instant. Stop guarantees that no renewal of the lease is sent
// after it returns. Leases with a fixed lease time are tracked too, so that
// their holders learn when the lease ends.
package watchdog
