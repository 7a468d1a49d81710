package redlock

import (
	"context"
	"slices"
	"time"

	"github.com/relock-go/relock/internal/core"
)

// TTL returns the validity left of the lock, whoever holds it: the
// quorum-th longest TTL among the members, less the drift allowance; 0
// when fewer than a quorum hold it. Members are asked at once, bounded by
// the node timeout; one that does not answer counts as not holding.
func (l *Lock) TTL(ctx context.Context) (time.Duration, error) {
	if err := l.ident().Check("ttl", ctx, unmade); err != nil {
		return 0, err
	}
	ttls := make(chan time.Duration, len(l.nodes))
	l.each(nil, func(_ int, n core.Member) {
		nctx, cancel := context.WithTimeout(ctx, l.nodeTimeout(l.cfg.Lease()))
		defer cancel()
		d, err := n.TTL(nctx)
		if err != nil || d < 0 {
			d = 0 // no answer, or a key without expiry: not a hold of ours
		}
		ttls <- d
	})
	got := make([]time.Duration, 0, len(l.nodes))
	for range l.nodes {
		got = append(got, <-ttls)
	}
	slices.SortFunc(got, func(a, b time.Duration) int { return int(b - a) })
	return max(got[l.quorum-1]-l.drift(l.cfg.Lease()), 0), nil
}

// Extend makes the fixed lease (WithLeaseTime) of the hold held carries
// end d after now on every member, succeeding when a quorum still held it;
// the token is unchanged and a lease never shortened. It returns
// ErrInvalidArgument for d under 30 ms or shorter than what is left, or
// for a hold the watchdog renews; ErrNotHeld when held carries no live
// hold of this lock; an error matching ErrLockLost (and held ends) when lost.
func (l *Lock) Extend(held context.Context, d time.Duration) error {
	if err := l.ident().Check("extend", held, unmade); err != nil {
		return err
	}
	return l.id.Wrap("extend", core.Extend(held, l.nodes[0].Client, d, l.nodeTimeout(l.cfg.Lease()), l.key()))
}
