// Package faults is relock's network and server fault suite. It
// holds no library code: its tests carry the build constraint
// `//go:build faults`, so `make test` leaves them out, and run with
//
//	cd tools && go vet -tags faults ./... && go test -race -tags faults -count=1 -timeout 10m ./faults/...
//
// (`make test-faults`, called by CI). tools is a module of its own, so
// that toxiproxy and its graph stay out of the library's go.mod. Every test runs real redis-server
// processes from internal/testkit/redistest on loopback ports, so without
// redis-server they fail under CI=true and skip loudly elsewhere.
//
// The faults, each across the primitives where it applies (lock.Mutex, the
// read and write sides of rwlock.RWMutex, semaphore.Semaphore, and a
// Redlock over three masters):
//
//   - latency above the lease, injected by an in-process toxiproxy between
//     the holder's client and Redis (TestFaultLatencyAboveLease);
//   - a partition (the proxy disabled) while holding and while waiting
//     (TestFaultPartitionMidHold, TestFaultPartitionMidWait);
//   - redis-server killed and restarted without persistence while holders
//     hold and waiters wait (TestFaultRedisRestartMidHold);
//   - the pub/sub connections killed (CLIENT KILL TYPE pubsub) while
//     waiters wait (TestFaultPubSubKilled).
//
// What they check: a holder is told of a loss (its context ends with
// ErrLockLost) before another owner can acquire, recorded as intervals that
// must not overlap; waiters end or keep waiting as their context says and
// recover once Redis is reachable; no goroutine outlives a test.
package faults
