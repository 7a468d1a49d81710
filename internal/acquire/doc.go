// Package acquire is the one wait loop of every relock primitive: try ->
// subscribe -> try again -> wait for the unlock message or the TTL the
// failed try returned (whichever first, bounded by ctx) -> retry. It never
// polls on an interval, and the uncontended path is one script call that
// never touches pub/sub. Goroutines of one process that wait for the same
// lock queue locally, first come first served (see package notify), and
// each acquire is one tracing span whose outcome, attempts and wait time
// the loop records.
package acquire
