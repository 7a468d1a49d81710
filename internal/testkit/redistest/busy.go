package redistest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// BusyScript runs a read-only Lua loop on c's server for d: past the
// server's busy-reply-threshold (start it with a low one), every other
// client is answered BUSY meanwhile. wait returns once the script ended;
// c needs a read timeout longer than d.
func BusyScript(c *redis.Client, d time.Duration) (wait func()) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		src := fmt.Sprintf(`local t = redis.call('TIME'); local e = t[1]*1000000 + t[2] + %d
while true do t = redis.call('TIME'); if t[1]*1000000 + t[2] > e then break end end return 1`, d.Microseconds())
		_ = c.Eval(context.Background(), src, nil).Err()
	}()
	return func() { <-done }
}

// RequireBusy waits for c's server to answer BUSY, as it
// does once a script (BusyScript) runs past its busy-reply-threshold.
func RequireBusy(t testing.TB, ctx context.Context, c redis.UniversalClient) {
	t.Helper()
	eventually(t, func() bool {
		err := c.Ping(ctx).Err()
		return err != nil && strings.HasPrefix(err.Error(), "BUSY")
	}, "the server never answered BUSY")
}

// Breakable records the connections a client dials (set Dial as its
// Options.Dialer), so that a test can break them as a network would,
// while the server stays up.
type Breakable struct {
	mu    sync.Mutex
	conns []net.Conn
}

// Dial dials and records the connection.
func (b *Breakable) Dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
	if err == nil {
		b.mu.Lock()
		b.conns = append(b.conns, c)
		b.mu.Unlock()
	}
	return c, err
}

// BreakAll closes every connection dialed so far.
func (b *Breakable) BreakAll() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.conns {
		_ = c.Close()
	}
	b.conns = nil
}
