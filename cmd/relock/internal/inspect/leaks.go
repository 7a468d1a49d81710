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
	rep := Report{Findings: []Finding{}}
	now, err := in.Now(ctx)
	if err != nil {
		return rep, err
	}
	add := func(key, name, problem, holder, format string, args ...any) {
		rep.Findings = append(rep.Findings, Finding{Key: key, Name: name, Problem: problem, Holder: holder, Detail: fmt.Sprintf(format, args...)})
	}
	// checkTTL reports a key of ours that never expires, or not soon
	// enough; what says what the key is.
	checkTTL := func(k, name, what string) error {
		rep.Keys++
		ttl, err := in.pttl(ctx, k)
		if err != nil {
			return err
		}
		switch {
		case ttl == NoTTL:
			add(k, name, "no-ttl", "", "%s without TTL: it never expires", what)
		case time.Duration(ttl)*time.Millisecond > MaxTTL:
			add(k, name, "long-ttl", "", "%s expires in %s, later than the %g h within which everything of relock's expires", what,
				// to the minute: a TTL read a moment after it was set
				// says the same
				(time.Duration(ttl) * time.Millisecond).Round(time.Minute), MaxTTL.Hours())
		}
		return nil
	}

	// hashes: locks, rwlocks, semaphores, and the semaphores' weights and
	// waiter marks
	hashes, err := in.Scan(ctx, pattern, "hash")
	if err != nil {
		return rep, err
	}
	for _, k := range hashes {
		if strings.HasPrefix(k, scripts.FairWaitersPrefix) {
			if err := checkTTL(k, "", "fair lock waiters hash"); err != nil {
				return rep, err
			}
			continue
		}
		if base, suffix, ok := semAux(k); ok {
			if err := checkTTL(k, unprefix(base), "semaphore "+strings.TrimPrefix(suffix, ":")+" hash"); err != nil {
				return rep, err
			}
			if err := in.semAuxLeaks(ctx, k, base, suffix, now, add); err != nil {
				return rep, err
			}
			continue
		}
		e, ok, err := in.get(ctx, k, now)
		if err != nil {
			return rep, err
		}
		if !ok {
			continue
		}
		if err := checkTTL(k, k, e.Kind+" hash"); err != nil {
			return rep, err
		}
		switch e.Kind {
		case KindSemaphore:
			for _, h := range e.Holders {
				if h.Expired {
					add(scripts.Permits(k), k, "expired-permit", h.ID,
						"permit of %d expired %s ago but is still counted: its holder is dead (reclaimed by the next acquire)", h.Count, ago(h.LeaseMs))
				}
			}
			for _, w := range e.Waiters {
				if w.MarkMs <= 0 {
					add(scripts.Waiters(k), k, "stale-waiter", w.ID,
						"waiter's mark expired %s ago: the waiter is gone (dropped when it reaches the head of the line, or with the keys)", ago(w.MarkMs))
				}
			}
		default:
			for _, h := range e.Holders {
				if h.Expired {
					add(k, k, "dead-reader", h.ID,
						"reader (count %d) is still listed but all its lease keys are gone: it died (purged by the next writer's try or read release)", h.Count)
				}
			}
		}
	}

	// strings: fencing counters, latches, rwlock lease keys
	strs, err := in.Scan(ctx, pattern, "string")
	if err != nil {
		return rep, err
	}
	for _, k := range strs {
		var err error
		switch {
		case strings.HasPrefix(k, scripts.TokenPrefix):
			err = checkTTL(k, "", "fencing counter")
		case strings.HasPrefix(k, scripts.UnlockLatchPrefix):
			err = checkTTL(k, "", "unlock latch")
		case strings.HasPrefix(k, scripts.AcquireLatchPrefix):
			err = checkTTL(k, "", "acquire latch")
		case strings.HasPrefix(k, scripts.HolderLabelPrefix):
			err = checkTTL(k, "", "holder label")
		default:
			tag, owner, i, ok := scripts.ParseReadTimeout(k)
			if !ok {
				continue
			}
			if err = checkTTL(k, unprefix(tag), "rwlock lease key"); err == nil {
				err = in.leaseKeyLeaks(ctx, k, tag, owner, i, add)
			}
		}
		if err != nil {
			return rep, err
		}
	}

	// zsets: rwlock write waiters, semaphore permits and waiters
	zsets, err := in.Scan(ctx, pattern, "zset")
	if err != nil {
		return rep, err
	}
	for _, k := range zsets {
		if base, ok := strings.CutSuffix(k, ":rwlock_write_waiters"); ok {
			if err := checkTTL(k, unprefix(base), "rwlock write-waiter set"); err != nil {
				return rep, err
			}
			continue
		}
		if base, suffix, ok := semAux(k); ok {
			if err := checkTTL(k, unprefix(base), "semaphore "+strings.TrimPrefix(suffix, ":")+" set"); err != nil {
				return rep, err
			}
			if err := in.semAuxLeaks(ctx, k, base, suffix, now, add); err != nil {
				return rep, err
			}
		}
	}
	sort.SliceStable(rep.Findings, func(i, j int) bool {
		a, b := rep.Findings[i], rep.Findings[j]
		if a.Key != b.Key {
			return a.Key < b.Key
		}
		return a.Holder < b.Holder
	})
	return rep, nil
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
			return fmt.Errorf("HGETALL %s: %w", n, err)
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
		return fmt.Errorf("HGETALL %s: %w", k, err)
	}
	permits := scripts.Permits(sem)
	for id := range weights {
		if err := in.client.ZScore(ctx, permits, id).Err(); err != nil {
			if !isNil(err) {
				return fmt.Errorf("ZSCORE %s: %w", permits, err)
			}
			add(k, sem, "orphan-weight", id, "weight of a permit that is not in %s: kept until the permits zset empties", permits)
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
			return fmt.Errorf("HGET %s: %w", n, err)
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
