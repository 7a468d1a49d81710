package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/scripts"
)

// Finding is one leak: a key of ours that will not go away on its own (no
// TTL) or not soon enough (a TTL above MaxTTL), or a holder whose lease
// has ended but who is still listed.
type Finding struct {
	Key string `json:"key"`
	// Name is the lock, rwlock or semaphore the key belongs to, when known.
	Name string `json:"name"`
	// Problem is a short code: no-ttl, long-ttl, dead-reader,
	// expired-permit, orphan-lease-key, orphan-permits, orphan-weight,
	// stale-waiter.
	Problem string `json:"problem"`
	// Holder is the owner, permit or waiter concerned, "" for a whole key.
	Holder string `json:"holder"`
	// Detail explains the finding in one line.
	Detail string `json:"detail"`
}

// Report is what Leaks finds.
type Report struct {
	Findings []Finding `json:"findings"`
	// Keys counts the keys of ours that were checked.
	Keys int `json:"keys"`
}

// MaxTTL is the longest a key of ours may have left: every key relock
// writes has a TTL (a fencing counter lives an hour after its lock's last
// acquisition) or is deleted when its hold ends, so anything longer was
// not written by it, or was changed by hand.
const MaxTTL = 24 * time.Hour

// Leaks scans the keys matching pattern for leaks:
//   - any key of ours (locks', rwlocks' and semaphores' keys, fencing
//     counters, latches, lease keys, waiter sets) without a TTL (PTTL -1),
//     which never expires, or with one above MaxTTL;
//   - rwlock readers still listed whose every lease key is gone, and
//     semaphore permits whose expiry has passed but are still in the
//     zset (dead owners: cleaned only by the next acquire);
//   - rwlock lease keys whose hash is gone or does not list the reader,
//     semaphore permits or weights without their semaphore or permit;
//   - semaphore waiters whose mark has expired.
//
// Findings are sorted by key, then holder.
func (in *Inspector) Leaks(ctx context.Context, pattern string) (Report, error) {
	l := &leakScan{in: in, rep: Report{Findings: []Finding{}}}
	var err error
	if l.now, err = in.Now(ctx); err != nil {
		return l.rep, err
	}
	for _, pass := range []struct {
		typ  string
		each func(context.Context, string) error
	}{{"hash", l.hash}, {"string", l.string}, {"zset", l.zset}} {
		keys, err := in.Scan(ctx, pattern, pass.typ)
		if err != nil {
			return l.rep, err
		}
		for _, k := range keys {
			if err := pass.each(ctx, k); err != nil {
				return l.rep, err
			}
		}
	}
	sort.SliceStable(l.rep.Findings, func(i, j int) bool {
		a, b := l.rep.Findings[i], l.rep.Findings[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Holder < b.Holder
	})
	return l.rep, nil
}

// leakScan is one run of Leaks: what it found so far.
type leakScan struct {
	in  *Inspector
	now int64 // the server's clock, ms
	rep Report
}

func (l *leakScan) add(key, name, problem, holder, format string, args ...any) {
	l.rep.Findings = append(l.rep.Findings, Finding{Key: key, Name: name, Problem: problem, Holder: holder, Detail: fmt.Sprintf(format, args...)})
}

// checkTTL reports a key of ours that never expires, or not soon enough;
// what says what the key is.
func (l *leakScan) checkTTL(ctx context.Context, k, name, what string) error {
	l.rep.Keys++
	ttl, err := l.in.pttl(ctx, k)
	if err != nil {
		return err
	}
	switch {
	case ttl == NoTTL:
		l.add(k, name, "no-ttl", "", "%s without TTL: it never expires", what)
	case time.Duration(ttl)*time.Millisecond > MaxTTL:
		l.add(k, name, "long-ttl", "", "%s expires in %s, later than the %g h within which everything of relock's expires", what,
			// to the minute: a TTL read a moment after it was set says
			// the same
			(time.Duration(ttl) * time.Millisecond).Round(time.Minute), MaxTTL.Hours())
	}
	return nil
}

// hash checks a hash: a lock, rwlock or semaphore, a semaphore's weights
// or waiter marks, a fair lock's waiters, a latch.
func (l *leakScan) hash(ctx context.Context, k string) error {
	switch {
	case strings.HasPrefix(k, scripts.FairWaitersPrefix):
		return l.checkTTL(ctx, k, "", "fair lock waiters hash")
	case isAux(k):
		return l.checkTTL(ctx, k, "", "latch hash")
	}
	if base, suffix, ok := semAux(k); ok {
		if err := l.checkTTL(ctx, k, unprefix(base), "semaphore "+strings.TrimPrefix(suffix, ":")+" hash"); err != nil {
			return err
		}
		return l.in.semAuxLeaks(ctx, k, base, suffix, l.now, l.add)
	}
	e, ok, err := l.in.get(ctx, k, l.now)
	if err != nil || !ok {
		return err
	}
	if err := l.checkTTL(ctx, k, k, e.Kind+" hash"); err != nil {
		return err
	}
	for _, h := range e.Holders {
		switch {
		case h.Expired && e.Kind == KindSemaphore:
			l.add(scripts.Permits(k), k, "expired-permit", h.ID,
				"permit of %d expired %s ago but is still counted: its holder is dead (reclaimed by the next acquire)", h.Count, ago(h.LeaseMs))
		case h.Expired:
			l.add(k, k, "dead-reader", h.ID,
				"reader (count %d) is still listed but all its lease keys are gone: it died (purged by the next writer's try or read release)", h.Count)
		}
	}
	for _, w := range e.Waiters {
		if e.Kind == KindSemaphore && w.MarkMs <= 0 {
			l.add(scripts.Waiters(k), k, "stale-waiter", w.ID,
				"waiter's mark expired %s ago: the waiter is gone (dropped when it reaches the head of the line, or with the keys)", ago(w.MarkMs))
		}
	}
	return nil
}

// string checks a string: a fencing counter, a latch, a holder label, an
// rwlock reader's lease key.
func (l *leakScan) string(ctx context.Context, k string) error {
	switch {
	case strings.HasPrefix(k, scripts.TokenPrefix):
		return l.checkTTL(ctx, k, "", "fencing counter")
	case strings.HasPrefix(k, scripts.UnlockLatchPrefix):
		return l.checkTTL(ctx, k, "", "unlock latch")
	case strings.HasPrefix(k, scripts.AcquireLatchPrefix):
		return l.checkTTL(ctx, k, "", "acquire latch")
	case strings.HasPrefix(k, scripts.HolderLabelPrefix):
		return l.checkTTL(ctx, k, "", "holder label")
	}
	tag, owner, i, ok := scripts.ParseReadTimeout(k)
	if !ok {
		return nil
	}
	if err := l.checkTTL(ctx, k, unprefix(tag), "rwlock lease key"); err != nil {
		return err
	}
	return l.in.leaseKeyLeaks(ctx, k, tag, owner, i, l.add)
}

// zset checks a sorted set: an rwlock's write waiters, a semaphore's
// permits or waiters.
func (l *leakScan) zset(ctx context.Context, k string) error {
	if base, ok := strings.CutSuffix(k, ":rwlock_write_waiters"); ok {
		return l.checkTTL(ctx, k, unprefix(base), "rwlock write-waiter set")
	}
	if base, suffix, ok := semAux(k); ok {
		if err := l.checkTTL(ctx, k, unprefix(base), "semaphore "+strings.TrimPrefix(suffix, ":")+" set"); err != nil {
			return err
		}
		return l.in.semAuxLeaks(ctx, k, base, suffix, l.now, l.add)
	}
	return nil
}

// semAux splits a semaphore auxiliary key into its base ({name} or a name
// with its own tag) and suffix.
func semAux(k string) (base, suffix string, ok bool) {
	for _, s := range scripts.SemaphoreSuffixes {
		if b, ok := strings.CutSuffix(k, s); ok && b != "" {
			return b, s, true
		}
	}
	return "", "", false
}

// unprefix turns the base of an auxiliary key back into the name: "{name}"
// becomes name, a name with its own tag stays.
func unprefix(base string) string {
	if strings.HasPrefix(base, "{") && strings.HasSuffix(base, "}") && strings.Count(base, "{") == 1 && strings.Count(base, "}") == 1 {
		return base[1 : len(base)-1]
	}
	return base
}

// names is every name whose auxiliary keys have this base: "{a}" may be
// the base of a (scripts.Suffix("a", ...)) and of "{a}" (its own tag).
func names(base string) []string {
	if n := unprefix(base); n != base {
		return []string{n, base}
	}
	return []string{base}
}

type addFunc func(key, name, problem, holder, format string, args ...any)

// semAuxLeaks checks a semaphore's permits, weights, waiters or marks key
// against its semaphore. Problems the semaphore's own check reports
// (expired permits, stale waiters) are not repeated here.
func (in *Inspector) semAuxLeaks(ctx context.Context, k, base, suffix string, now int64, add addFunc) error {
	var sem string
	for _, n := range names(base) {
		fields, err := in.client.HGetAll(ctx, n).Result()
		if err != nil && !isWrongType(err) {
			return fmt.Errorf("HGETALL %q: %w", n, err)
		}
		if Classify(fields) == KindSemaphore {
			sem = n
			break
		}
	}
	if sem == "" {
		if suffix == ":permits" || suffix == ":weights" {
			add(k, unprefix(base), "orphan-permits", "", "semaphore %s key but no semaphore hash %q: nothing will reclaim it", strings.TrimPrefix(suffix, ":"), unprefix(base))
		}
		return nil
	}
	if suffix != ":weights" {
		return nil
	}
	weights, err := in.client.HGetAll(ctx, k).Result()
	if err != nil {
		return fmt.Errorf("HGETALL %q: %w", k, err)
	}
	permits := scripts.Permits(sem)
	for id := range weights {
		if err := in.client.ZScore(ctx, permits, id).Err(); err != nil {
			if !isNil(err) {
				return fmt.Errorf("ZSCORE %q: %w", permits, err)
			}
			add(k, sem, "orphan-weight", id, "weight of a permit that is not in %q: kept until the permits zset empties", permits)
		}
	}
	return nil
}

// leaseKeyLeaks checks an rwlock reader's lease key.
func (in *Inspector) leaseKeyLeaks(ctx context.Context, k, base, owner string, i int64, add addFunc) error {
	name := unprefix(base)
	for _, n := range names(base) {
		c, err := in.client.HGet(ctx, n, owner).Int64()
		if err == nil && i <= c {
			if mode, _ := in.client.HGet(ctx, n, "mode").Result(); mode != "" {
				return nil // listed
			}
		}
		if err != nil && !isNil(err) && !isWrongType(err) {
			return fmt.Errorf("HGET %q: %w", n, err)
		}
	}
	add(k, name, "orphan-lease-key", owner, "rwlock lease key whose hash %q is gone or no longer lists this read", name)
	return nil
}

func isNil(err error) bool { return errors.Is(err, redis.Nil) }

// ago formats a non-positive remaining time in ms as a duration ago.
func ago(ms int64) string {
	return (time.Duration(-ms) * time.Millisecond).Round(time.Millisecond).String()
}
