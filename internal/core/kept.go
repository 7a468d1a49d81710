package core

import "context"

// A key may be kept with a hold: renewed in the same script as the hold,
// so that it lapses with it, and never outliving it by more than a
// renewal's TTL. An election's leader record is one: it must say who
// leads for exactly as long as that leader's hold lasts. Its owner writes
// and deletes it; the lock only keeps it alive.

type keptKey struct{}

type kept struct {
	lock, key string
}

// KeepWith returns ctx asking the first count of lock's next acquisition
// made with it to keep key alive with its hold. The request names the lock
// because the held context carries ctx's values: a nested acquisition of
// another lock must not keep the key too.
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
