// Package workers runs short calls on goroutines that are kept for a
// while and reused. A Redlock tries and releases every member at once,
// one goroutine per member; a goroutine started for each of them would
// grow its stack anew through the Redis client's call path every time,
// which costs more CPU than the call's own work on a small machine. A
// Pool hands a call to a worker that is idle, and starts one only when
// none is; a worker that has had nothing to do for the linger ends, so an
// idle Pool holds no goroutine.
package workers
