// Package member is what a primitive offers the redlock adapter: one lock
// on one Redis, driven for an owner the adapter chooses (one owner across
// all masters), one attempt at a time, with the watchdog target that
// renews it. Primitives embed a Hook (which seals redlock.Member); users
// never build one.
package member
