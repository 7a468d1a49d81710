package lock

import (
	"context"
	"fmt"

	"github.com/relock-go/relock/internal/base"
)

// heldBy adds to err who holds the lock, when its holders have labels:
// "not acquired (held by pod-7 for 4.2s)".
func (m *Mutex) heldBy(ctx context.Context, err error) error {
	holders, herr := m.client.HKeys(context.WithoutCancel(ctx), m.name).Result()
	if herr != nil || len(holders) == 0 {
		return err
	}
	if by := base.HeldBy(ctx, m.client, m.name, holders, m.cfg.UnlockTimeout); by != "" {
		return fmt.Errorf("%w (%s)", err, by)
	}
	return err
}
