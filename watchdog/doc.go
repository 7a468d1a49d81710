// Package watchdog keeps the leases of held locks alive.
//
// A lock held without a fixed lease time is written with a short TTL (30 s
// by default) and renewed at a third of it for as long as it is held, so
// that a crashed holder's lock frees itself while a live holder keeps it.
// One Watchdog serves every primitive of the process: a hashed timing wheel
// driven by one goroutine (which exits when nothing is held), which also
// sends the renewals. Renewals that fall due in the same tick are batched:
// one multi-key script per cluster slot and primitive kind, a client's
// scripts in one pipeline (a large round in several, of at most 2048 leases,
// one after the other), so 100,000 held locks cost a few round trips per
// tick, not 100,000. A lease renewed late keeps its phase (its next renewal
// is one interval after the one that fell due), so leases that the wheel
// renewed together because it ran late spread out again. A round across
// several servers (a Redlock) sends to the others from one goroutine per
// server. If a reply is still awaited when the wheel must turn again (a
// lease's loss time, or halfway from a renewal to its loss), a new goroutine
// takes the wheel over and the stalled one ends with its round trip.
//
// A renewal that errors is retried soon, until the lease could lapse on the
// server, measured on the local monotonic clock from the send time of the
// last successful renewal. A lease whose key is gone, or that passes that
// instant unrenewed, is lost: the hold's context ends with ErrLockLost no
// later than that instant. A renewal pipeline waits for its reply until the
// earliest loss time among its leases (at least 50 ms), when the client
// applies context deadlines (go-redis ContextTimeoutEnabled); otherwise its
// read timeout bounds it. Once Unlock (RUnlock, Release) returns, no
// renewal of that hold is sent; it does not wait for the network. Leases
// with a fixed lease time are tracked too, so that their holders learn when
// the lease ends.
package watchdog
