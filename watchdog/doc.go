// Package watchdog keeps the leases of held locks alive.
//
// A lock held without a fixed lease time is written with a short TTL (30 s
// by default) and renewed every third of it while held, so a crashed
// holder's lock frees itself. One Watchdog serves every primitive of the
// process: a hashed timing wheel on one goroutine (which exits when nothing
// is held). Renewals due in the same tick are batched: one multi-key script
// per cluster slot and primitive kind, a client's scripts in pipelines of
// at most 2048 leases sent in turn, a Redlock's servers in parallel; so
// 100,000 held locks cost a few round trips per tick. A slow reply never
// stalls the wheel: a new goroutine takes it over.
//
// A renewal that errors is retried soon, until the lease could lapse on the
// server, measured on the local monotonic clock from the send time of the
// last successful renewal. A lease whose key is gone, or that passes that
// instant unrenewed, is lost: the hold's context ends with ErrLockLost no
// later than that instant. A renewal pipeline waits for its reply until the
// earliest loss time among its leases (at least 50 ms) when the client
// applies context deadlines (go-redis ContextTimeoutEnabled), else until its
// read timeout. Once Unlock (RUnlock, Release) returns, no renewal of that
// hold is sent; it does not wait for the network. Fixed leases are tracked
// too, so that their holders learn when the lease ends.
package watchdog
