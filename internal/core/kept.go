package core

import "context"

// A key may be kept with a hold: renewed in the hold's script, so that it
// lapses with it, within a renewal's TTL (an election's leader record).
// Its owner writes and deletes it; the lock only keeps it alive.

type keptKey struct{}

type kept struct {
	lock, key string
}

// KeepWith returns ctx asking the first count of lock's next acquisition
// to keep key alive with its hold. It names the lock since the held
// context carries ctx's values to nested acquisitions of other locks.
func KeepWith(ctx context.Context, lock, key string) context.Context {
	return context.WithValue(ctx, keptKey{}, kept{lock, key})
}

// Kept returns the key ctx asks an acquisition of lock to keep, if any.
func Kept(ctx context.Context, lock string) (string, bool) {
	k, ok := ctx.Value(keptKey{}).(kept)
	if !ok || k.lock != lock {
		return "", false
	}
	return k.key, true
}
