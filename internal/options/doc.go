// Package options holds the configuration every primitive takes, so that
// lock.WithLeaseTime and its twins in rwlock, semaphore and redlock are one
// option type and one validation.
package options
