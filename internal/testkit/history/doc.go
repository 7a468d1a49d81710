// Package history records who held which lock when, as seen by the
// clients, and checks the record for violations of mutual exclusion,
// of a semaphore's capacity and of fencing-token order. Contention tests
// and the soak program (tools/soak) feed it; a Check that reports
// nothing is their verdict.
//
// A hold is recorded as the interval [Acquired, Released): Acquired is
// read after Lock/Acquire returned, Released before Unlock/Release is
// called. That client interval lies inside the hold on the server, so two
// client intervals that overlap mean two server holds that overlapped: a
// reported violation is always real, never an artefact of network delay.
// The converse does not hold (a violation shorter than the round trips
// around it can go unseen), which is why tests run many short holds.
// Only holds that ended normally belong in the record: a hold whose lease
// was lost (Unlock returned ErrLockLost, or the hold's context ended with
// it) did not last until Released on the server.
//
// Check reports, per lock name (intervals are half-open, so a hold that
// starts the instant another ends does not overlap it):
//   - two Exclusive holds of different owners that overlap;
//   - an Exclusive hold that overlaps a Shared hold of another owner;
//   - an instant at which the permits of a semaphore's holds add up to
//     more than its size;
//   - fencing tokens out of order (below);
//   - malformed records (released before acquired, a semaphore hold with
//     n or size < 1, holds of one name recorded with different sizes or as
//     both a lock and a semaphore).
//
// Holds of one owner may overlap: that is re-entry, or a writer taking the
// read lock (downgrade). An empty Owner is a distinct owner per hold.
//
// Fencing tokens. Every acquisition, re-entry included, draws the next
// value of the lock's counter, on the server, while it holds the lock.
// What a client can check from its intervals:
//   - the Exclusive holds of a lock, in the order they were acquired, carry
//     strictly increasing tokens. Different owners never overlap, so the
//     earlier hold ended on the server before the later began; a re-entry
//     is acquired inside its owner's outer hold, after it;
//   - a Shared hold's token is greater than that of every Exclusive hold
//     released before it was acquired, and smaller than that of every
//     Exclusive hold acquired after it was released. Shared holds are not
//     ordered among themselves: two readers' tokens follow the order in
//     which the server granted them, which their client intervals do not
//     reveal.
//
// This assumes that an owner's acquisitions of one lock are made one after
// another (the next is asked for after the previous returned), as nested
// re-entry is. Holds without a token (HasToken false) are not checked for
// order, nor are semaphores, which have none.
//
// Why not a model checker. github.com/anishathalye/porcupine checks that
// a history of operations, each with its call and return time, is
// linearizable against a sequential model; it searches the orders the
// concurrent operations could have taken, exponential in the worst case,
// and may answer "unknown" when its time budget runs out. The properties
// here need none of that: mutual exclusion, capacity and token order are
// statements about intervals that are already known to lie inside the
// server's holds, decided exactly by sorting them and sweeping once, in
// O(n log n) plus the number of overlaps found, over hundreds of thousands
// of holds. A model checker would be needed to decide linearizability of
// the lock's whole API (TryLock answers, HoldCount, IsLocked) from call
// and return times; these tests do not ask that question, so the module
// takes no dependency on porcupine.
//
// Recording is safe for concurrent use and cheap: a mutex and an append,
// so it perturbs the timing under test as little as possible.
package history
