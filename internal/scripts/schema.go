package scripts

import (
	"strconv"
	"strings"

	"github.com/google/uuid"
)

// The key schema: every key and channel a lock called name uses besides
// its own, all in name's cluster slot. The redisson_ names are Redisson's,
// so that a Java service meets the same keys; relock_ names are our own.

// Prefixes of the key families named below, for scanning (relock leaks).
const (
	TokenPrefix        = "redisson_lock_token:"
	UnlockLatchPrefix  = "redisson_unlock_latch:"
	AcquireLatchPrefix = "relock_acquire_latch:"
)

// The suffixes of an rwlock's and a semaphore's auxiliary keys.
const (
	writeWaitersSuffix = "rwlock_write_waiters"
	readTimeoutSuffix  = "rwlock_timeout"
	permitsSuffix      = "permits"
	weightsSuffix      = "weights"
	waitersSuffix      = "waiters"
	waiterExpirySuffix = "waiter_expiry"
)

// LockChannel is the channel a lock's unlock message goes to.
func LockChannel(name string) string { return Prefix("redisson_lock__channel", name) }

// RWLockChannel is the channel of an rwlock's unlock messages.
func RWLockChannel(name string) string { return Prefix("redisson_rwlock", name) }

// SemaphoreChannel is the channel of a semaphore's release messages.
func SemaphoreChannel(name string) string { return Prefix("redisson_sc", name) }

// FairQueue is a fair lock's list of waiters (RFairLock's).
func FairQueue(name string) string { return Prefix("redisson_lock_queue", name) }

// FairTimeouts is the zset of a fair lock's waiters' deadlines (RFairLock's).
func FairTimeouts(name string) string { return Prefix("redisson_lock_timeout", name) }

// FairWaitersPrefix is the prefix of the fair locks' waiters hashes.
const FairWaitersPrefix = "relock_fair_waiter:"

// FairWaiters is the hash of a fair lock's relock waiters, waiter id ->
// "<lease ms>:<owner id>", to whom a release may hand the lock directly.
func FairWaiters(name string) string { return Prefix("relock_fair_waiter", name) }

// ElectionRecord is an election's leader record: owner, value, epoch,
// since, revision and lease, kept alive with the leader's hold.
func ElectionRecord(name string) string { return Prefix("relock_election", name) }

// ElectionChannel is where an election's changes are published.
func ElectionChannel(name string) string { return Prefix("relock_election__channel", name) }

// Token is the fencing counter of a lock or rwlock (RFencedLock's).
func Token(name string) string { return Prefix("redisson_lock_token", name) }

// UnlockLatch is the prefix of an unlock's answer keys (per request id).
func UnlockLatch(name string) string { return Prefix("redisson_unlock_latch", name) + ":" }

// ForceUnlocked is the hash (owner -> 1, living as their lease would) of
// owners whose holds a force unlock ended, so that their release can tell
// that from its own lost reply. It lies under the unlock latches' ACL pattern.
func ForceUnlocked(name string) string { return UnlockLatch(name) + "forced" }

// AcquireLatch is the prefix of an acquisition's answer keys (per request id).
func AcquireLatch(name string) string { return Prefix("relock_acquire_latch", name) + ":" }

// Tag is the hash-tagged base of name's suffixed keys: "{name}", or name
// itself when it holds its own "{".
func Tag(name string) string {
	s := Suffix(name, "")
	return s[:len(s)-1]
}

// WriteWaiters is the zset of an rwlock's waiting writers' marks.
func WriteWaiters(name string) string { return Suffix(name, writeWaitersSuffix) }

// ReadTimeouts is the prefix of a reader's lease keys, one per read count:
// ReadTimeouts(name, owner) + ":" + count.
func ReadTimeouts(name, owner string) string { return Suffix(name, owner+":"+readTimeoutSuffix) }

// ReadTimeout is a reader's lease key for its i-th read count.
func ReadTimeout(name, owner string, i int64) string {
	return ReadTimeouts(name, owner) + ":" + strconv.FormatInt(i, 10)
}

// ParseReadTimeout splits a reader's lease key into its rwlock's Tag, its
// owner (<uuid>:<n>) and its count; ok is false for any other key.
func ParseReadTimeout(key string) (tag, owner string, i int64, ok bool) {
	// A missing ':' leaves a part empty, which the checks below refuse.
	rest, count, _ := cutLast(key)
	i, err := strconv.ParseInt(count, 10, 64)
	rest, ok = strings.CutSuffix(rest, ":"+readTimeoutSuffix)
	if err != nil || i < 0 || !ok {
		return "", "", 0, false
	}
	rest, thread, _ := cutLast(rest)
	tag, id, _ := cutLast(rest)
	if owner = id + ":" + thread; !IsOwner(owner) {
		return "", "", 0, false
	}
	return tag, owner, i, true
}

// IsOwner reports whether s looks like an owner id, <uuid>:<n>.
func IsOwner(s string) bool {
	id, n, found := cutLast(s)
	if !found || len(id) != 36 || n == "" {
		return false
	}
	if _, err := strconv.ParseUint(n, 10, 64); err != nil {
		return false
	}
	_, err := uuid.Parse(id)
	return err == nil
}

func cutLast(s string) (before, after string, found bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return s, "", false
	}
	return s[:i], s[i+1:], true
}

// Permits is the zset of a semaphore's permits (scored by expiry).
func Permits(name string) string { return Suffix(name, permitsSuffix) }

// Weights is the hash of the permits each semaphore acquisition took.
func Weights(name string) string { return Suffix(name, weightsSuffix) }

// Waiters is the zset of a semaphore's queued waiters.
func Waiters(name string) string { return Suffix(name, waitersSuffix) }

// WaiterExpiry is the hash of a semaphore's waiters' mark expiries.
func WaiterExpiry(name string) string { return Suffix(name, waiterExpirySuffix) }

// SemaphoreSuffixes are a semaphore's auxiliary key suffixes, with ':'.
var SemaphoreSuffixes = []string{":" + permitsSuffix, ":" + weightsSuffix, ":" + waitersSuffix, ":" + waiterExpirySuffix}

// HolderLabelPrefix is the prefix of the holder label keys.
const HolderLabelPrefix = "relock_holder:"

// HolderLabel is the key of holder's label on the lock called name: a
// string "<label>\t<since, unix ms>" with the hold's TTL.
func HolderLabel(name, holder string) string { return Prefix("relock_holder", name) + ":" + holder }
