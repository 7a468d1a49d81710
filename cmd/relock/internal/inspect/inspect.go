package inspect

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/relock-go/relock/internal/conn"
	"github.com/relock-go/relock/internal/core"
	"github.com/relock-go/relock/internal/scripts"
)

// Kinds of what Inspect finds.
const (
	KindLock      = "lock"
	KindRWLock    = "rwlock"
	KindSemaphore = "semaphore"
)

// Sides of a holder.
const (
	SideHold   = "hold"   // a lock's owner; Count is its reentry count
	SideRead   = "read"   // an rwlock reader; Count is its read count
	SideWrite  = "write"  // an rwlock writer; Count is its write count
	SidePermit = "permit" // a semaphore acquisition; Count is its weight
)

// NoTTL is the TTL of a key that never expires (PTTL -1).
const NoTTL = -1

// IsOwner reports whether s looks like an owner id, <uuid>:<n>.
func IsOwner(s string) bool { return scripts.IsOwner(s) }

// Holder is one hold of an Entry.
type Holder struct {
	// ID is the owner (<uuid>:<n>) of a lock or rwlock hold, the permit id
	// of a semaphore acquisition.
	ID string `json:"id"`
	// Side is hold, read, write or permit.
	Side string `json:"side"`
	// Count is the reentry count (lock, rwlock) or the permits taken.
	Count int64 `json:"count"`
	// LeaseMs is what is left of the hold's lease in milliseconds: the
	// hash's PTTL for a lock or writer, the longest PTTL of a reader's
	// lease keys, the permit's expiry score minus the server time. -1: no
	// TTL; 0 or less: expired (see Expired).
	LeaseMs int64 `json:"lease_ms"`
	// Expired: the lease has ended but the holder is still listed (a dead
	// owner): a reader all of whose lease keys are gone, a permit whose
	// score is past.
	Expired bool `json:"expired"`
	// Label is the holder's label (WithHolderLabel), "" when it set none.
	Label string `json:"label"`
}

// Waiter is one waiting writer (rwlock) or waiter (semaphore).
type Waiter struct {
	// ID is the waiter's owner: a relock owner id, or a Redisson thread's
	// id as it stands in a fair lock's list.
	ID string `json:"id"`
	// Seat is a relock fair waiter's id in the list, when it is not the
	// owner's (a seat its process reuses; empty otherwise).
	Seat string `json:"seat,omitempty"`
	// MarkMs is what is left of the waiter's mark in milliseconds: a mark
	// is a lease too, and a waiter that died stops blocking others when it
	// ends. 0 or less: expired.
	MarkMs int64 `json:"mark_ms"`
}

// Entry is one lock, rwlock or semaphore. Its JSON form has these fields,
// always, in this order; null where a field does not apply.
type Entry struct {
	Name string `json:"name"`
	Kind string `json:"kind"`
	// Mode is read or write for an rwlock, null otherwise.
	Mode *string `json:"mode"`
	// TTLMs is the hash's PTTL: -1 when it has none (a semaphore's, on
	// purpose; a lock's or rwlock's, a leak).
	TTLMs int64 `json:"ttl_ms"`
	// FencingToken is the value of redisson_lock_token:{name}, the last
	// token handed out, when the counter exists.
	FencingToken *int64 `json:"fencing_token"`
	// Size and Used are a semaphore's record, null otherwise.
	Size    *int64   `json:"size"`
	Used    *int64   `json:"used"`
	Holders []Holder `json:"holders"`
	Waiters []Waiter `json:"waiters"`
}

// Key is one Redis key of an entry, with its type and PTTL.
type Key struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	TTLMs int64  `json:"ttl_ms"`
}

// Detail is an Entry with every key of it that exists.
type Detail struct {
	Entry
	Keys []Key `json:"keys"`
}

// Inspector reads relock's (and Redisson's) keys on a Redis server or
// cluster. It only reads, except for ForceUnlock.
type Inspector struct {
	client redis.UniversalClient
}

// New returns an Inspector of client: a *redis.Client or a
// *redis.ClusterClient (whose every master is scanned).
func New(client redis.UniversalClient) *Inspector { return &Inspector{client: client} }

func (in *Inspector) cluster() (*redis.ClusterClient, bool) {
	cc, ok := in.client.(*redis.ClusterClient)
	return cc, ok
}

// Now is the server's clock (TIME) in milliseconds: permits' and marks'
// expiries are server times. On a cluster it asks one master.
func (in *Inspector) Now(ctx context.Context) (int64, error) {
	t, err := in.client.Time(ctx).Result()
	if err != nil {
		return 0, fmt.Errorf("TIME: %w", err)
	}
	return t.UnixMilli(), nil
}

// List returns the locks, rwlocks and semaphores whose names match
// pattern, sorted by name. Hashes that are none of these are skipped.
func (in *Inspector) List(ctx context.Context, pattern string) ([]Entry, error) {
	names, err := in.Scan(ctx, pattern, "hash")
	if err != nil {
		return nil, err
	}
	now, err := in.Now(ctx)
	if err != nil {
		return nil, err
	}
	out := []Entry{}
	for _, name := range names {
		if isAux(name) {
			continue // a fair lock's waiters, a latch: shown with their lock
		}
		e, ok, err := in.get(ctx, name, now)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// isAux reports whether a hash is a lock's auxiliary key, not a lock:
// its fair waiters, or a latch (a release's record of the owners a force
// unlock ended is a hash of owners, as a lock is).
func isAux(key string) bool {
	return strings.HasPrefix(key, scripts.FairWaitersPrefix) ||
		strings.HasPrefix(key, scripts.UnlockLatchPrefix) || strings.HasPrefix(key, scripts.AcquireLatchPrefix)
}

// labels fills in the holders' labels (one round trip).
func (in *Inspector) labels(ctx context.Context, e *Entry) {
	ids := make([]string, len(e.Holders))
	for i, h := range e.Holders {
		ids[i] = h.ID
	}
	labels := core.Labels(ctx, conn.Of(in.client), e.Name, ids, 5*time.Second)
	for i := range e.Holders {
		e.Holders[i].Label = labels[e.Holders[i].ID].Label
	}
}

// ErrNotFound reports that no lock, rwlock or semaphore has the name.
var ErrNotFound = errors.New("no lock, rwlock or semaphore of that name")

// Get returns the entry called name, or ErrNotFound.
func (in *Inspector) Get(ctx context.Context, name string) (Entry, error) {
	now, err := in.Now(ctx)
	if err != nil {
		return Entry{}, err
	}
	e, ok, err := in.get(ctx, name, now)
	if err != nil {
		return Entry{}, err
	}
	if !ok {
		return Entry{}, fmt.Errorf("%q: %w", name, ErrNotFound)
	}
	return e, nil
}

// Show returns the entry called name with every key of it, holder labels
// and latches included, or ErrNotFound.
func (in *Inspector) Show(ctx context.Context, name string) (Detail, error) {
	e, err := in.Get(ctx, name)
	if err != nil {
		return Detail{}, err
	}
	d := Detail{Entry: e, Keys: []Key{}}
	cands := []string{name, scripts.Token(name)}
	switch e.Kind {
	case KindLock:
		cands = append(cands, scripts.FairQueue(name), scripts.FairTimeouts(name), scripts.FairWaiters(name), scripts.ElectionRecord(name))
	case KindRWLock:
		for _, h := range e.Holders {
			if h.Side == SideRead {
				for j := int64(1); j <= h.Count; j++ {
					cands = append(cands, scripts.ReadTimeout(name, h.ID, j))
				}
			}
		}
		cands = append(cands, scripts.WriteWaiters(name))
	case KindSemaphore:
		cands = append(cands, scripts.Permits(name), scripts.Weights(name), scripts.Waiters(name), scripts.WaiterExpiry(name))
	}
	aux, err := in.auxKeys(ctx, name)
	if err != nil {
		return Detail{}, err
	}
	cands = append(cands, aux...)
	for _, k := range cands {
		typ, err := in.client.Type(ctx, k).Result()
		if err != nil {
			return Detail{}, fmt.Errorf("TYPE %q: %w", k, err)
		}
		if typ == "none" {
			continue
		}
		ttl, err := in.pttl(ctx, k)
		if err != nil {
			return Detail{}, err
		}
		d.Keys = append(d.Keys, Key{Key: k, Type: typ, TTLMs: ttl})
	}
	return d, nil
}

// pttl returns key's PTTL in ms: -1 without TTL, -2 when it is gone.
func (in *Inspector) pttl(ctx context.Context, key string) (int64, error) {
	d, err := in.client.PTTL(ctx, key).Result()
	if err != nil {
		return 0, fmt.Errorf("PTTL %q: %w", key, err)
	}
	// go-redis returns the -1 and -2 replies as durations of -1 and -2 ns.
	if d < 0 {
		return int64(d), nil
	}
	return d.Milliseconds(), nil
}

// Classify tells what a hash with these fields is: KindRWLock (a mode
// field), KindSemaphore (size and used), KindLock (every field an owner
// id with an integer count), or "" (not ours).
func Classify(fields map[string]string) string {
	if len(fields) == 0 {
		return ""
	}
	if _, ok := fields["mode"]; ok {
		return KindRWLock
	}
	_, size := fields["size"]
	_, used := fields["used"]
	if size && used {
		return KindSemaphore
	}
	for f, v := range fields {
		if !IsOwner(f) {
			return ""
		}
		if _, err := strconv.ParseInt(v, 10, 64); err != nil {
			return ""
		}
	}
	return KindLock
}

// get reads the entry called name; ok is false when it is none.
func (in *Inspector) get(ctx context.Context, name string, now int64) (Entry, bool, error) {
	fields, err := in.client.HGetAll(ctx, name).Result()
	if err != nil {
		if isWrongType(err) {
			return Entry{}, false, nil
		}
		return Entry{}, false, fmt.Errorf("HGETALL %q: %w", name, err)
	}
	kind := Classify(fields)
	if kind == "" {
		return Entry{}, false, nil
	}
	e := Entry{Name: name, Kind: kind, Holders: []Holder{}, Waiters: []Waiter{}}
	if e.TTLMs, err = in.pttl(ctx, name); err != nil {
		return Entry{}, false, err
	}
	if kind != KindSemaphore {
		tok, err := in.client.Get(ctx, scripts.Token(name)).Int64()
		switch {
		case err == nil:
			e.FencingToken = &tok
		case !errors.Is(err, redis.Nil) && !isWrongType(err):
			return Entry{}, false, fmt.Errorf("GET fencing token of %q: %w", name, err)
		}
	}
	switch kind {
	case KindLock:
		for f, v := range fields {
			n, _ := strconv.ParseInt(v, 10, 64)
			e.Holders = append(e.Holders, Holder{ID: f, Side: SideHold, Count: n, LeaseMs: e.TTLMs})
		}
		err = in.fairQueue(ctx, &e, now)
	case KindRWLock:
		err = in.rwlock(ctx, &e, fields, now)
	case KindSemaphore:
		err = in.semaphore(ctx, &e, fields, now)
	}
	if err != nil {
		return Entry{}, false, err
	}
	in.labels(ctx, &e)
	if kind == KindSemaphore {
		return e, true, nil // permits stay in expiry order
	}
	sort.Slice(e.Holders, func(i, j int) bool {
		a, b := e.Holders[i], e.Holders[j]
		if a.ID != b.ID {
			return a.ID < b.ID
		}
		return a.Side < b.Side
	})
	return e, true, nil
}

// fairQueue lists a fair lock's waiters (lock.NewFair, Redisson's
// RFairLock) in the order they are served, each with its deadline.
func (in *Inspector) fairQueue(ctx context.Context, e *Entry, now int64) error {
	ids, err := in.client.LRange(ctx, scripts.FairQueue(e.Name), 0, -1).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("LRANGE waiters of %q: %w", e.Name, err)
	}
	// relock's waiters: seat -> "<lease ms>:<owner>".
	seats, err := in.client.HGetAll(ctx, scripts.FairWaiters(e.Name)).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("HGETALL waiters of %q: %w", e.Name, err)
	}
	for _, id := range ids {
		deadline, err := in.client.ZScore(ctx, scripts.FairTimeouts(e.Name), id).Result()
		if err != nil && !errors.Is(err, redis.Nil) && !isWrongType(err) {
			return fmt.Errorf("ZSCORE deadline of %q in %q: %w", id, e.Name, err)
		}
		w := Waiter{ID: id, MarkMs: int64(deadline) - now}
		if _, o, ok := strings.Cut(seats[id], ":"); ok && o != "" {
			w.ID, w.Seat = o, id
		}
		e.Waiters = append(e.Waiters, w)
	}
	return nil
}

func (in *Inspector) rwlock(ctx context.Context, e *Entry, fields map[string]string, now int64) error {
	mode := fields["mode"]
	e.Mode = &mode
	for f, v := range fields {
		if f == "mode" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			continue
		}
		if id, ok := strings.CutSuffix(f, ":write"); ok {
			e.Holders = append(e.Holders, Holder{ID: id, Side: SideWrite, Count: n, LeaseMs: e.TTLMs})
			continue
		}
		// a reader's lease is its longest lease key
		h := Holder{ID: f, Side: SideRead, Count: n, LeaseMs: -2}
		for j := int64(1); j <= n; j++ {
			p, err := in.pttl(ctx, scripts.ReadTimeout(e.Name, f, j))
			if err != nil {
				return err
			}
			if p == NoTTL || h.LeaseMs == NoTTL {
				h.LeaseMs = NoTTL
			} else if p > h.LeaseMs {
				h.LeaseMs = p
			}
		}
		if h.LeaseMs == -2 {
			h.LeaseMs, h.Expired = 0, true
		}
		e.Holders = append(e.Holders, h)
	}
	ws, err := in.client.ZRangeWithScores(ctx, scripts.WriteWaiters(e.Name), 0, -1).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("ZRANGE write waiters of %q: %w", e.Name, err)
	}
	for _, z := range ws {
		e.Waiters = append(e.Waiters, Waiter{ID: fmt.Sprint(z.Member), MarkMs: int64(z.Score) - now})
	}
	return nil
}

func (in *Inspector) semaphore(ctx context.Context, e *Entry, fields map[string]string, now int64) error {
	size, _ := strconv.ParseInt(fields["size"], 10, 64)
	used, _ := strconv.ParseInt(fields["used"], 10, 64)
	e.Size, e.Used = &size, &used
	permits, err := in.client.ZRangeWithScores(ctx, scripts.Permits(e.Name), 0, -1).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("ZRANGE permits of %q: %w", e.Name, err)
	}
	weights, err := in.client.HGetAll(ctx, scripts.Weights(e.Name)).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("HGETALL weights of %q: %w", e.Name, err)
	}
	for _, z := range permits {
		id := fmt.Sprint(z.Member)
		n, _ := strconv.ParseInt(weights[id], 10, 64)
		left := int64(z.Score) - now
		e.Holders = append(e.Holders, Holder{ID: id, Side: SidePermit, Count: n, LeaseMs: left, Expired: left <= 0})
	}
	waiters, err := in.client.ZRange(ctx, scripts.Waiters(e.Name), 0, -1).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("ZRANGE waiters of %q: %w", e.Name, err)
	}
	marks, err := in.client.HGetAll(ctx, scripts.WaiterExpiry(e.Name)).Result()
	if err != nil && !isWrongType(err) {
		return fmt.Errorf("HGETALL waiter marks of %q: %w", e.Name, err)
	}
	for _, w := range waiters {
		exp, _ := strconv.ParseInt(marks[w], 10, 64)
		e.Waiters = append(e.Waiters, Waiter{ID: w, MarkMs: exp - now})
	}
	return nil
}

func isWrongType(err error) bool {
	return err != nil && strings.HasPrefix(err.Error(), "WRONGTYPE")
}

// Channel is the channel whose message wakes e's waiters, as Redisson names it.
func Channel(e Entry) string {
	switch e.Kind {
	case KindRWLock:
		return scripts.RWLockChannel(e.Name)
	case KindSemaphore:
		return scripts.SemaphoreChannel(e.Name)
	}
	return scripts.LockChannel(e.Name)
}

// ErrChanged reports that a force unlock found the name holding another
// kind than the caller saw: nothing was changed.
var ErrChanged = core.ErrChanged

// ForceUnlock releases e whoever holds it, in one script (the one the
// primitives' ForceUnlock and ForceRelease run): a lock's or rwlock's hash
// (and the rwlock readers' lease keys) is deleted; a semaphore's permits
// are deleted and its used count set to 0 (its size record stays). The
// unlock message is published on the channel Redisson uses (SPUBLISH on a
// cluster) so that waiters wake. It returns false when the hash was
// already gone, ErrChanged when it is of another kind now.
func (in *Inspector) ForceUnlock(ctx context.Context, e Entry) (bool, error) {
	publish := "publish"
	if _, ok := in.cluster(); ok {
		publish = "spublish"
	}
	ok, err := core.ForceUnlock(ctx, conn.Of(in.client), e.Kind, e.Name, publish)
	if err != nil {
		return false, fmt.Errorf("force unlock %s %q: %w", e.Kind, e.Name, err)
	}
	return ok, nil
}
